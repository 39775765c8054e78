"""Tools around the training CLI, each run as `python -m project.tools.<name>`: sweep, seeds, export, runs."""
