"""Tools beside the CLI: `python -m <package> export|runs|sweep|seeds|cv|schema|completion|verify`."""
