"""The README's walk-through "Your own model" / "Your own dataset", run as written (with shorter training)."""

import re
import shlex
import subprocess
import sys

import pytest

from conftest import QUIET, ROOT
from project.cli import cli_main

SHORT = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2", *QUIET]


def walk_through() -> list[tuple[str, str]]:
    """(language, code) of each fenced block from "### Your own model" up to the next section after the data."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Your own model") : readme.index("### Sweeps")]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.DOTALL)


@pytest.mark.slow
def test_the_walk_through_runs_as_written(tmp_path, monkeypatch):
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    monkeypatch.syspath_prepend(str(tmp_path))  # where `my_models.py` and `my_data.py` are importable from
    runs = []  # what each `python -m project` command built
    for language, code in walk_through():
        if language == "python":  # a file, named on its first line
            (tmp_path / code.splitlines()[0].removeprefix("# ")).write_text(code)
            continue
        for line in code.splitlines():
            command = shlex.split(line, comments=True)
            if command[:3] == ["python", "-m", "project"]:
                cli = cli_main([*command[3:], *(SHORT if command[3] == "fit" else QUIET)])
                assert cli.trainer.state.finished
                network, data = type(cli.model.network).__name__, type(cli.datamodule).__name__
                runs.append((network, data, cli.datamodule.num_classes))
            else:
                assert command[0] == "python", line
                subprocess.run([sys.executable, *command[1:]], cwd=tmp_path, check=True)
    assert runs == [
        ("TinyNet", "DigitsDataModule", 10),
        ("DigitsCNN", "FileDataModule", 5),
        ("DigitsCNN", "FileDataModule", 5),  # `test` from the checkpoint, without --data
        ("DigitsCNN", "EvenOddDataModule", 2),
    ]
