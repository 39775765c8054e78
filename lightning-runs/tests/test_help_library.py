"""`fit --help` of a RunsCLI: the options of the classes `--model` and `--data` build by default before the
trainer's, each option's first sentence, a count for a type with too many subclasses to list; and the JSON Schema of
its configs (`python -m <package> schema`)."""

import json
from contextlib import redirect_stdout
from io import StringIO

import jsonschema  # nbformat's dependency (the template's dev tools)
import lightning as L
import pytest
from jsonargparse import ArgumentParser
from lightning.pytorch.cli import LightningCLI
from torch import nn

from lightning_runs.cli.help import MAX_LISTED, RunsHelpFormatter, first_sentence, without_long_listing
from lightning_runs.cli.parser import ProjectParser
from lightning_runs.cli.schema import subcommand_schema
from lightning_runs.tools.schema import write_schema
from tiny_tasks import TinyDataModule, cli_main


def printed(command) -> str:
    with pytest.MonkeyPatch.context() as patch, redirect_stdout(out := StringIO()), pytest.raises(SystemExit) as exit_:
        patch.setenv("COLUMNS", "100")
        command()
    assert exit_.value.code == 0
    return out.getvalue()


class ModelByClassPath(LightningCLI):
    """`--model` takes any LightningModule, TinyClassifier by default, as `--data` does in every RunsCLI."""

    def add_arguments_to_parser(self, parser) -> None:
        parser.set_defaults({"model": {"class_path": "tiny_tasks.TinyClassifier"}})


def test_the_default_datas_options_come_first():
    text = printed(lambda: cli_main(["fit", "--help"]))
    assert "--data tiny_tasks.TinyDataModule, the default (--data.help <class> lists another class's options):" in text
    assert text.index("  --model.lr") < text.index("  --trainer.max_epochs")
    assert text.index("  --data.batch_size") < text.index("  --trainer.max_epochs")
    assert "(type: int, default: 32)" in text[text.index("  --data.batch_size") :][:120]


def test_a_class_chosen_by_class_path_has_its_options_first_under_its_own_name_not_as_the_default():
    text = printed(lambda: cli_main(["fit", "--model", "tiny_tasks.SlowTinyClassifier", "--help"]))
    assert "--model tiny_tasks.SlowTinyClassifier, as chosen (--model.help <class>" in text
    assert text.index("  --model.lr") < text.index("  --trainer.max_epochs")


def test_the_default_models_options_come_first_when_model_takes_a_class_path():
    def fit_help():
        ModelByClassPath(L.LightningModule, TinyDataModule, subclass_mode_model=True, parser_class=ProjectParser)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.argv", ["tiny", "fit", "--help"])  # LightningCLI's args= would warn
        text = printed(fit_help)
    trainer = text.index("  --trainer.max_epochs")
    assert text.index("--model tiny_tasks.TinyClassifier, the default (--model.help <class>") < trainer
    assert text.index("  --model.lr") < trainer


def test_a_help_keeps_the_first_sentence_without_the_docstrings_own_default():
    assert first_sentence("Stop training after this. Default: ``-1``. Then more.") == "Stop training after this."
    assert first_sentence("The devices to use. Default: ``'auto'``.") == "The devices to use."
    assert first_sentence("Defaults to ``None``. If ``True``, only tensors.") == "If ``True``, only tensors."
    assert first_sentence("set to ``'step'`` to log ``lr``.") == "set to ``'step'`` to log ``lr``.", "one sentence"


def test_a_type_with_more_subclasses_than_a_screen_holds_says_how_many():
    listed = ", ".join(f"pkg.C{n}" for n in range(MAX_LISTED))
    assert without_long_listing(f"(type: A, known subclasses: {listed})") == f"(type: A, known subclasses: {listed})"
    many = ", ".join(f"pkg.C{n}" for n in range(300))
    assert without_long_listing(f"(type: A, default: null, known subclasses: {many})") == (
        "(type: A, default: null, 300 known subclasses)"
    )


def test_an_nn_module_option_is_one_entry_not_a_page():
    parser = ArgumentParser(formatter_class=RunsHelpFormatter)
    parser.add_argument("--backbone", type=nn.Module, help="The network. Any module, by class path.")
    text = " ".join(printed(lambda: parser.parse_args(["--help"])).split())
    assert "--backbone BACKBONE The network. (type: <class 'Module'>, default: null" in text
    assert "torch.nn.Identity" not in text and " known subclasses)" in text


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
    assert valid({"model": {"init_args": {"num_classes": 5}}}), "given, it wins over the data's (contract/links.py)"


def test_the_schema_leaves_another_class_path_to_the_parser(schema):
    valid = jsonschema.Draft202012Validator(schema).is_valid
    assert valid({"data": {"class_path": "my_data.Other", "init_args": {"anything": 1}}})
    assert not valid({"data": {"class_path": 3}})


def test_the_schema_tool_writes_the_file_and_says_how_editors_use_it(tmp_path, capsys):
    write_schema(cli_main, output=tmp_path / "configs/schema.json")
    assert json.loads((tmp_path / "configs/schema.json").read_text())["properties"]["trainer"]
    assert "# yaml-language-server: $schema=" in capsys.readouterr().out
