"""Tools around a project's CLI, each run as `python -m <package> <name>`: sweep, seeds, export, runs, schema,
completion; each enters through its function's options (function_cli). Nothing is imported here: `runs` reads
summaries without torch."""
