"""Lightning's own example programs, copied byte for byte from Lightning's repository (see test_lightning_examples.py
for the commit and paths), with DataModules of ours in place of their downloads (local_data.py) and a config each
(configs/): what a new user brings to `python -m project verify`."""
