"""What `python -m project fit --help` shows a person (the model's and the data's options first, a few hundred lines,
no list of every imported nn.Module), and the JSON Schema an editor checks configs/ against."""

import json
import re
from contextlib import redirect_stdout
from io import StringIO

import jsonschema  # nbformat's dependency (a dev tool), standing in for an editor's validator
import pytest
import yaml

from project.cli import run
from support import ROOT

# `fit --help` at 80 columns was 1,732 lines before (665 of them the nn.Module subclasses --model.network could
# name, the model's options after line 530); now 556 (572 once --model takes a class path). 650 holds a few more
# options, and fails if the subclass listing (200+ lines), the full docstrings (~300) or the usage line listing
# every option (~100) comes back.
MAX_FIT_HELP_LINES = 650
CONFIGS = sorted((ROOT / "configs").rglob("*.yaml"))


def help_text(*args: str) -> str:
    with pytest.MonkeyPatch.context() as patch, pytest.raises(SystemExit) as exit_:
        patch.setenv("COLUMNS", "80")  # argparse wraps to the terminal's width
        with redirect_stdout(out := StringIO()):
            run([*args])
    assert exit_.value.code == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def fit_help() -> str:
    return help_text("fit", "--help")


def test_fit_help_fits_in_a_few_hundred_lines(fit_help):
    assert len(fit_help.splitlines()) <= MAX_FIT_HELP_LINES
    assert fit_help.count("\n  --") >= 120, "every option is still listed"  # 125 here


def test_the_models_and_the_datas_options_come_before_the_trainers(fit_help):
    trainer = fit_help.index("  --trainer.max_epochs")
    assert fit_help.index("  --data.batch_size") < trainer
    assert "--data project.data.DigitsDataModule, the default (--data.help <class>" in fit_help
    assert fit_help.index("  --model.lr") < trainer
    assert "--model project.model.DigitsClassifier, the default (--model.help <class>" in fit_help


def test_no_option_lists_every_imported_module(fit_help):
    texts = [fit_help]
    if "--model.help" in fit_help:  # --model takes a class path: its class's own help lists the network option too
        texts.append(help_text("fit", "--model.help", "DigitsClassifier"))
    for text in texts:
        network = " ".join(text[text.index("  --model.network NETWORK") :].split()[:20])
        assert re.search(r"default: \{'class_path': 'project.networks.DigitsCNN'.*, \d{3} known subclasses\)", network)
        assert "torch.nn.Identity" not in text


def test_each_option_shows_the_first_sentence_of_its_documentation(fit_help):
    text = " ".join(fit_help.split())
    assert "--trainer.max_epochs MAX_EPOCHS Stop training once this number of epochs is reached. (type:" in text
    assert "Default: ``" not in text, "Lightning's own default, not this recipe's, is left out"
    assert "python -m pydoc lightning.pytorch.Trainer" in text, "where the rest is"


@pytest.fixture(scope="module")
def schema(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("schema") / "schema.json"
    run(["schema", "--output", str(path)])
    return json.loads(path.read_text())


def test_the_schema_is_a_json_schema(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["title"] == "python -m project fit --config"


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: str(path.relative_to(ROOT)))
def test_the_schema_accepts_every_config(schema, config):
    errors = jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(config.read_text()))
    assert [error.message for error in errors] == []


@pytest.mark.parametrize(
    "config",
    [
        {"trainer": {"max_epochs": "many"}},  # a wrong type
        {"trainer": {"max_epoch": 3}},  # a misspelt key
        {"data": {"batch_size": "64"}},  # the default DataModule's argument, beside its class path or not
        {"model": {"network": {"init_args": {"dropout": "none"}}}},  # the default network's
        {"model": {"lr": [0.1]}},
    ],
    ids=json.dumps,
)
def test_the_schema_refuses_a_wrong_value(schema, config):
    assert not jsonschema.Draft202012Validator(schema).is_valid(config)


def test_the_schema_leaves_another_class_to_the_parser(schema):
    other = {"model": {"network": {"class_path": "project.networks.MLP", "init_args": {"hidden": [64]}}}}
    assert jsonschema.Draft202012Validator(schema).is_valid(other)
    assert jsonschema.Draft202012Validator(schema).is_valid({"$schema": "schema.json", "trainer": "trainer.yaml"})
