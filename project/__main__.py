from project.cli import run

run()
