"""Experiments written as a new user writes them from Lightning's docs: plain LightningModules and DataModules,
nothing of the template imported, run by `python -m project fit --model experiments.<file>.<Class> --data ...`."""
