"""The machinery behind the CLI: run folders, checkpoints and resume, fault handling, logging extras, summaries.

Nobody should need to edit this package to train their own model or data: those are the files one level up
(networks.py, model.py, data.py, ...). A fix here is the template's to make, and `make update-template` brings it in.
"""
