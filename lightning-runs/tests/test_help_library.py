"""`fit --help` of a RunsCLI: a count for a type with too many subclasses to list; and the JSON Schema of its configs
(`python -m <package> schema`)."""

import json
import typing
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import jsonschema  # nbformat's dependency (the template's dev tools)
import pytest
import torch
from jsonargparse import ArgumentParser
from torch import nn

from lightning_runs.cli.help import MAX_LISTED, RunsHelpFormatter
from lightning_runs.tools.schema import subcommand_schema, type_schema, write_schema
from tiny_tasks import cli_main


def printed(command) -> str:
    with pytest.MonkeyPatch.context() as patch, redirect_stdout(out := StringIO()), pytest.raises(SystemExit) as exit_:
        patch.setenv("COLUMNS", "100")
        command()
    assert exit_.value.code == 0
    return out.getvalue()


def test_an_nn_module_option_is_one_entry_not_a_page():
    parser = ArgumentParser(formatter_class=RunsHelpFormatter)
    parser.add_argument("--backbone", type=nn.Module, help="The network. Any module, by class path.")
    text = " ".join(printed(lambda: parser.parse_args(["--help"])).split())
    assert "--backbone BACKBONE The network. Any module, by class path. (type: <class 'Module'>, default: null" in text
    assert "torch.nn.Identity" not in text and " known subclasses)" in text
    small = ArgumentParser(formatter_class=RunsHelpFormatter)
    small.add_argument("--optimizer", type=torch.optim.Optimizer, help="The optimizer.")
    listed = " ".join(printed(lambda: small.parse_args(["--help"])).split())
    assert "torch.optim.Adam" in listed and len(torch.optim.Optimizer.__subclasses__()) <= MAX_LISTED


def test_a_sequence_or_an_iterable_is_an_array_of_its_items():
    from collections.abc import Iterable, Sequence

    for hint in (Sequence[str], Iterable[str], list[str], tuple[str, ...], typing.Sequence[str], typing.List[str]):  # noqa: UP006
        assert type_schema(hint) == {"type": "array", "items": {"type": "string"}}, hint
    assert type_schema(Sequence) == type_schema(typing.Iterable) == {"type": "array"}


@pytest.fixture(scope="module")
def schema() -> dict:
    return subcommand_schema(cli_main)


def test_the_schema_checks_each_key_and_type(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    valid = jsonschema.Draft202012Validator(schema).is_valid
    assert valid({}) and valid({"model": {"lr": 0.1}, "data": {"batch_size": 8}, "trainer": {"max_epochs": 2}})
    assert valid({"data": {"init_args": {"batch_size": 8}}}) and valid({"data": "TinyDataModule"})
    assert not valid({"model": {"lr": "fast"}}) and not valid({"trainer": {"max_epoch": 2}})
    assert not valid({"data": {"batch_size": "8"}}), "the default DataModule's arguments, chosen by class path"
    assert valid({"best_checkpoint": {"monitor": "val/acc"}}) and valid({"figures": None})


def test_the_schema_leaves_another_class_path_to_the_parser(schema):
    valid = jsonschema.Draft202012Validator(schema).is_valid
    assert valid({"data": {"class_path": "my_data.Other", "init_args": {"anything": 1}}})
    assert not valid({"data": {"class_path": 3}})


def test_the_schema_tool_writes_the_file_and_says_how_editors_use_it(tmp_path, capsys):
    write_schema(cli_main, output=tmp_path / "configs/schema.json")
    assert json.loads((tmp_path / "configs/schema.json").read_text())["properties"]["trainer"]
    assert "# yaml-language-server: $schema=" in capsys.readouterr().out


def test_a_schema_written_over_a_folder_is_one_line_from_the_entry_points_handler(capsys):
    from tiny_runs import refusal, snapshot

    from lightning_runs.errors import main
    from lightning_runs.tools import schema

    Path("configs").mkdir()
    before = snapshot()
    error = refusal(capsys, lambda: main(lambda: schema.main(cli_main, ["--output", "configs"])))
    assert error.startswith("error: configs") and "is a folder; give a file" in error, error
    assert snapshot() == before


@pytest.mark.parametrize("tool", ["schema", "completion"])
def test_a_tools_output_is_checked_before_the_cli_is_built(tool, capsys):
    """The refusal of a file the tool did not write comes first: building the schema or the completion took ~0.6 s."""
    from tiny_runs import refusal

    import lightning_runs

    def unbuilt(args=None, **kwargs):
        raise AssertionError("the CLI was built before --output was checked")

    Path("README.md").write_text("# the owner's words\n")
    error = refusal(capsys, lambda: lightning_runs.main(unbuilt, "tiny_tasks", [tool, "--output", "README.md"]))
    assert error == f"error: --output README.md: a file {tool} did not write; give a new file, or move that one away"


@pytest.mark.parametrize("tool", ["schema", "completion"])
def test_a_tools_output_never_replaces_a_file_it_did_not_write_and_replaces_its_own(tool, capsys):
    """`schema --output README.md`, `completion --output pyproject.toml` wrote over them."""
    from tiny_runs import refusal, snapshot

    import lightning_runs

    for name in ("README.md", "pyproject.toml"):
        Path(name).write_text("# the owner's words\n")
    before = snapshot()
    for name in ("README.md", "pyproject.toml"):
        error = refusal(capsys, lambda: lightning_runs.main(cli_main, "tiny_tasks", [tool, "--output", name]))  # noqa: B023
        assert error == f"error: --output {name}: a file {tool} did not write; give a new file, or move that one away"
    assert snapshot() == before, "nothing replaced"
    lightning_runs.main(cli_main, "tiny_tasks", [tool, "--output", "mine"])
    first = Path("mine").read_bytes()
    Path("mine").write_bytes(first + b"\nan earlier version")
    lightning_runs.main(cli_main, "tiny_tasks", [tool, "--output", "mine"])  # its own file: replaced, as make does
    assert Path("mine").read_bytes() == first


@pytest.mark.parametrize("tool", ["schema", "completion"])
def test_a_tools_output_never_replaces_a_checkpoint(tool, capsys):
    """`schema --output keep.ckpt` and `completion --output keep.ckpt`: the checkpoint is refused and kept as it was."""
    from tiny_runs import refusal

    import lightning_runs

    torch.save({"state_dict": {"layer.weight": torch.ones(2, 2)}, "global_step": 3}, "keep.ckpt")
    before = Path("keep.ckpt").read_bytes()
    error = refusal(capsys, lambda: lightning_runs.main(cli_main, "tiny_tasks", [tool, "--output", "keep.ckpt"]))
    assert error == f"error: --output keep.ckpt: a file {tool} did not write; give a new file, or move that one away"
    assert Path("keep.ckpt").read_bytes() == before and sorted(Path().iterdir()) == [Path("keep.ckpt")]
