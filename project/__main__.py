import lightning_runs

if not lightning_runs.reader_tool(__package__):  # `runs` answers at once, without importing torch or the model
    from project.cli import run

    run()
