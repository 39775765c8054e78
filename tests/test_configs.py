"""Every config in configs/ starts with the command that runs it, and that command parses."""

import re

import pytest

from project.cli import cli_main

from helpers import ROOT

CONFIGS = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "configs").rglob("*.yaml"))
PACKAGE = cli_main.__module__.split(".")[0]


def test_there_is_a_default_config():
    assert "configs/digits.yaml" in CONFIGS


@pytest.mark.parametrize("config", CONFIGS)
def test_every_config_starts_with_its_command_and_that_command_parses(config, capsys):
    first_line = (ROOT / config).read_text().splitlines()[0]  # `# python -m project fit --config ...`
    command = re.match(rf"# python -m {PACKAGE} (\w+)((?: --config \S+)+)", first_line)
    assert command and config in command[2].split(), first_line
    configs = [item for path in command[2].split()[1::2] for item in ("--config", str(ROOT / path))]
    with pytest.raises(SystemExit) as exit_:  # --print_config parses all of it, builds nothing, and exits 0
        cli_main([command[1], *configs, "--print_config"])
    printed = capsys.readouterr()
    assert exit_.value.code == 0, printed.err[-2000:]
    assert "model:" in printed.out and "trainer:" in printed.out
