"""What the README and docs/ tell a user to run still runs: the walk-through of docs/making-it-yours.md as written
(with shorter training), and every documented command, make target and repository path."""

import contextlib
import importlib
import importlib.util
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lightning_runs import TOOLS

import project
from project.cli import DigitsCLI, cli_main, run

from support import ONE_EPOCH_TWO_BATCHES, QUIET, ROOT, slow_repeats

PACKAGE = project.__name__  # `project` here; a copy made by `make new-project` has its own name
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
WALK_THROUGH = ROOT / "docs/making-it-yours.md"
PYTHON_M = re.compile(r"\bpython3? -m ([A-Za-z_][\w.]*\w)(?![\w.<])")  # not a placeholder: benchmarks.<name>
FOLDERS = (
    PACKAGE,
    "lightning-runs",
    "configs",
    "sweeps",
    "scripts",
    "benchmarks",
    "notebooks",
    "tests",
    "docs",
)  # of this repository
GENERATED = {"configs/schema.json"}  # written by `make schema`, never committed (.gitignore)


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of each fenced block."""
    return re.findall(r"```(\w*)\n(.*?)```", text, flags=re.DOTALL)


def code_text(text: str) -> str:
    """The inline code spans and fenced blocks of a markdown text: what a reader types or opens."""
    return "\n".join(re.findall(r"```\w*\n.*?```|`[^`\n]+`", text, flags=re.DOTALL))


def sections(text: str, first: str, last: str) -> str:
    """From the heading `first` to the end of the section headed `last`."""
    end = text.find("\n## ", text.index(last) + len(last))
    return text[text.index(first) : end if end != -1 else None]


def shell_commands(block: str) -> list[list[str]]:
    """The simple commands of a shell block, as words: continuation lines joined, comments dropped, `a && b` split."""
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            end = next((i for i, word in enumerate(words) if word in ("&&", "||", ";", "|")), len(words))
            commands.append(words[:end])
            words = words[end + 1 :]
    return [command for command in commands if command]


def documented(language: str = "bash") -> list[tuple[str, list[str]]]:
    """(document, command) for every command in the shell blocks of the README and docs/."""
    return [
        (path.name, command)
        for path in DOCS
        for block_language, block in code_blocks(path.read_text())
        if block_language == language
        for command in shell_commands(block)
    ]


def module_runs() -> list[tuple[str, list[str]]]:
    """(module, arguments) of every `python -m <module> ...` (or `torchrun ... -m <module> ...`) in the docs."""
    runs = []
    for _, command in documented():
        if "-m" in command[:-1]:
            at = command.index("-m")
            runs.append((command[at + 1], command[at + 2 :]))
    return runs


def is_tool(args: list[str]) -> bool:
    """`python -m project export ...` runs a tool (lightning_runs.TOOLS), `python -m project fit ...` the CLI."""
    return bool(args) and args[0] in TOOLS


def write_documented_files(folder: Path) -> None:
    """Every code block that starts by naming its file (`# my_models.py`) becomes that file, as a reader would save it;
    configs/ and sweeps/ are this repository's."""
    for path in DOCS:
        for _, block in code_blocks(path.read_text()):
            if named := re.match(r"# ([\w-]+\.(?:py|yaml))\n", block):
                (folder / named[1]).write_text(block)
    for name in ("configs", "sweeps"):
        (folder / name).symlink_to(ROOT / name)


def printed_config(command, *args: str) -> str:
    """What `<command> <args> --print_config` prints; it must exit 0 having parsed every option."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit:
        command([*args, "--print_config"])
    assert exit.value.code in (0, None), out.getvalue()
    return out.getvalue()


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text().splitlines()
    assert len(readme) <= 200
    assert {"make train", "make test"} <= {word for line in readme[:40] for word in re.findall(r"make \w+", line)}


def test_python_m_project_fit_trains_what_make_train_trains(in_tmp):
    (in_tmp / "configs").symlink_to(ROOT / "configs")
    assert printed_config(cli_main, "fit") == printed_config(cli_main, "fit", "--config", "configs/digits.yaml")


class Built(Exception):
    """Raised by the CLI instead of parsing, with the parser it built."""


@pytest.fixture(scope="module")
def parser():
    """The parser `python -m project` builds, built once (0.7 s): parsing is what a documented command must pass.
    Options are checked against every signature and class paths imported; nothing is instantiated or run."""

    def hand_over(cli, parser, args):
        raise Built(parser)

    with pytest.MonkeyPatch.context() as patch, pytest.raises(Built) as built:
        patch.setattr(DigitsCLI, "parse_arguments", hand_over)
        cli_main([])
    return built.value.args[0]


DOCUMENTED = sorted({shlex.join(args) for module, args in module_runs() if module == PACKAGE and not is_tool(args)})


def what_parsing_checks(command: str) -> set[str]:
    """The subcommand, the option names, and the config files and class paths a command names: what its parse reads
    and imports. Its other values only go through the same options' types."""
    words = shlex.split(command)
    named = {word for word in words[1:] if re.search(r"\.ya?ml$|(^|\.)[A-Z]\w*$", word)}
    return {words[0], *named, *(word.split("=")[0] for word in words if word.startswith("-"))}


def repeated(commands: list[str]) -> dict[str, str]:
    """Each command whose parse checks nothing a fuller everyday command does not -> that everyday command."""
    everyday, repeats = {}, {}
    for command in sorted(commands, key=lambda command: (-len(what_parsing_checks(command)), command)):
        checks = what_parsing_checks(command)
        covering = next((other for other, its in everyday.items() if checks <= its), None)
        if covering:
            repeats[command] = covering
        else:
            everyday[command] = checks
    return repeats


@pytest.mark.parametrize("args", slow_repeats(DOCUMENTED, DOCUMENTED, repeated(DOCUMENTED)))
def test_every_documented_command_parses(args, parser, in_tmp, monkeypatch):
    write_documented_files(in_tmp)
    monkeypatch.syspath_prepend(str(in_tmp))  # the documented my_models.py and my_data.py, as class paths
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert parser.parse_args(shlex.split(args)).subcommand
    except SystemExit as exit:  # --help and --print_config print, then exit
        assert exit.code == 0


@pytest.mark.parametrize(
    "args",
    sorted({tuple(args) for module, args in module_runs() if module == PACKAGE and is_tool(args)}),
    ids=shlex.join,
)
def test_every_documented_tool_command_parses(args, parser, in_tmp):
    """`python -m project <tool> ...`, against that tool's own parser; the options that are not the tool's (cv's and
    sweep's `--model.lr 0.003`) against fit's, as the tool hands them to each fit."""
    write_documented_files(in_tmp)
    tool, *options = args
    printed = yaml.safe_load(printed_config(lambda given: run([tool, *given]), *options))
    words = [part for word in options for part in (word.split("=", 1) if word.startswith("--") else [word])]
    given = {key.removeprefix("--"): yaml.safe_load(value) for key, value in zip(words[::2], words[1::2], strict=True)}
    given = (yaml.safe_load((in_tmp / given.pop("config")).read_text()) if "config" in given else {}) | given
    own = {key: value for key, value in given.items() if key.partition(".")[0] in printed}
    assert {key: printed[key] for key in own} == own, "each option's value, a --config file's too"
    fits = [word for key, value in given.items() if key not in own for word in (f"--{key}", str(value))]
    assert not fits or parser.parse_args(["fit", *fits]).subcommand == "fit"


def test_every_documented_module_exists():
    named = {module for module, _ in module_runs()}  # and those in comments and prose (`# = python -m ...`):
    named |= {module for path in DOCS for module in PYTHON_M.findall(code_text(path.read_text()))}
    assert {PACKAGE, "benchmarks.compare"} <= named
    spans = "\n".join(code_text(path.read_text()) for path in DOCS)
    assert [tool for tool in TOOLS if f"python -m {PACKAGE} {tool}" not in spans] == [], "each tool documented"
    assert sorted(module for module in named if importlib.util.find_spec(module) is None) == []


def test_every_documented_make_target_exists():
    makefiles = (ROOT / "Makefile").read_text() + (ROOT / "template.mk").read_text()  # the template's targets too
    targets = set(re.findall(r"^([\w-]+):", makefiles, flags=re.MULTILINE))
    documented_targets = {
        re.match(r"make\s+(?:\w+=\S+\s+)*([\w-]+)", span)[1]
        for path in DOCS
        for span in re.findall(r"`(make\s[^`]+)`", path.read_text())
    } | {next(w for w in command[1:] if "=" not in w) for _, command in documented() if command[0] == "make"}
    assert documented_targets - targets == set()


def test_every_repository_path_the_docs_name_exists():
    pattern = rf"(?<![\w./-])(?:{'|'.join(FOLDERS)})/[\w./-]*\w/?"
    named = {match for path in DOCS for match in re.findall(pattern, code_text(path.read_text()))}
    assert named, "the pattern finds the paths"
    missing = sorted(path for path in named if not (ROOT / path).exists() and path not in GENERATED)
    assert missing == [], missing


@pytest.mark.slow
def test_the_walk_through_runs_as_written(in_tmp, monkeypatch):
    (in_tmp / "configs").symlink_to(ROOT / "configs")
    monkeypatch.syspath_prepend(str(in_tmp))  # where `my_models.py` and `my_data.py` are importable from
    walk_through = sections(WALK_THROUGH.read_text(), "## Your own model", "## Your own dataset")
    runs = []  # what each `python -m project` command built
    for language, block in code_blocks(walk_through):
        if language == "python":  # a file, named on its first line
            (in_tmp / block.splitlines()[0].removeprefix("# ")).write_text(block)
            continue
        for command in shell_commands(block):
            if command[:3] == ["python", "-m", PACKAGE]:
                cli = cli_main([*command[3:], *QUIET, *(ONE_EPOCH_TWO_BATCHES if command[3] == "fit" else [])])
                assert cli.trainer.state.finished
                network, data = type(cli.model.network).__name__, type(cli.datamodule).__name__
                runs.append((network, data, cli.datamodule.num_classes))
            else:
                assert command[0] == "python", command
                subprocess.run([sys.executable, *command[1:]], cwd=in_tmp, check=True)
    assert runs == [
        ("TinyNet", "DigitsDataModule", 10),
        ("DigitsCNN", "FileDataModule", 5),
        ("DigitsCNN", "FileDataModule", 5),  # `test` from the checkpoint, without --data
        ("MLP", "FileDataModule", 3),  # a table
        ("MLP", "FileDataModule", 3),  # 1-D signals
        ("DigitsCNN", "FileDataModule", 3),  # colour images
        ("DigitsCNN", "FileDataModule", 3),  # predicting a file of them
        ("MLP", "BlobsDataModule", 4),  # an ordinary LightningDataModule
        ("MLP", "BlobsDataModule", 4),
        ("DigitsCNN", "EvenOddDataModule", 2),
    ]


def test_your_own_lightningmodule_runs_as_written(in_tmp, monkeypatch):
    """docs/making-it-yours.md's regression: a module and DataModule of the user's, fit, then test from the file."""
    monkeypatch.syspath_prepend(str(in_tmp))
    section = sections(WALK_THROUGH.read_text(), "## Your own LightningModule", "## Your own LightningModule")
    built = []
    for language, block in code_blocks(section):
        if language == "python":
            (in_tmp / block.splitlines()[0].removeprefix("# ")).write_text(block)
            continue
        for command in shell_commands(block):
            assert command[:3] == ["python", "-m", PACKAGE], command
            cli = cli_main([*command[3:], *QUIET, *(ONE_EPOCH_TWO_BATCHES if command[3] == "fit" else [])])
            assert cli.trainer.state.finished
            built.append((type(cli.model).__name__, type(cli.datamodule).__name__, cli.model.hparams.input_shape))
    assert built == [("Regressor", "Diabetes", [10])] * 2
    assert "test/loss" in cli.trainer.callback_metrics
