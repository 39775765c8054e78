"""A config of the wrong shape is one line, exit 2, before anything is written (issue 31, item 5): YAML nested 10,000
levels deep was a RecursionError traceback, `trainer: [1, 2]` an AttributeError (or dropped without a word when an
option such as --trainer.max_epochs followed), `model: 5` jsonargparse's nine lines about Union subtypes."""

from pathlib import Path

import pytest

from support import ONE_EPOCH_TWO_BATCHES, assert_kept, refusal, run, snapshot

TOO_DEEP = (
    "refusing YAML nested more than 100 levels deep (lists or mappings one inside another; lightning_runs/limits.py)"
)


def nested(kind: str, levels: int, inside: str = "1") -> str:
    """A value `levels` deep: lists in lists, or mappings in mappings."""
    return "[" * levels + inside + "]" * levels if kind == "lists" else "{a: " * levels + inside + "}" * levels


@pytest.mark.parametrize(
    "kind,levels",
    [("lists", 10_000), ("mappings", 10_000), ("lists", 500)],  # 500: under libyaml's own limit, past PyYAML's stack
    ids=["lists", "mappings", "500_levels"],
)
def test_a_config_nested_past_the_depth_limit_is_refused_before_it_is_parsed(kind, levels, capsys):
    Path("deep.yaml").write_text(f"model:\n  lr: {nested(kind, levels)}\n")
    before = snapshot()
    error = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, "--config", "deep.yaml"))
    assert error == f"error: --config deep.yaml: {TOO_DEEP}"
    assert not assert_kept(before, snapshot()) and not Path("runs").exists()


def test_a_value_nested_past_the_depth_limit_on_the_command_line_is_refused_too(capsys):
    error = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, "--model.lr", nested("lists", 10_000)))
    assert error == f"error: --model: {TOO_DEEP}"
    assert not Path("runs").exists()


def test_a_value_nested_within_the_limit_gets_the_options_own_answer(capsys):
    Path("nested.yaml").write_text(f"model:\n  lr: {nested('lists', 98, '0.1')}\n")  # 99 levels with `model:`
    error = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, "--config", "nested.yaml"))
    assert error == "error: --model.lr: expected PositiveFloat, got list"


SECTIONS = [
    ("trainer: [1, 2]", "trainer (line 1) is a list"),
    ("trainer: 5", "trainer (line 1) is a number"),
    ("trainer:", "trainer (line 1) is empty"),
    ("seed_everything: 1\nearly_stopping: true", "early_stopping (line 2) is true or false"),
]


@pytest.mark.parametrize("then", [[], ["--trainer.max_epochs=1"]], ids=["alone", "an_option_after_it"])
@pytest.mark.parametrize("text,said", SECTIONS, ids=["list", "number", "empty", "bool"])
def test_a_section_of_options_given_as_a_list_a_number_or_nothing_is_refused_naming_its_line(text, said, then, capsys):
    Path("section.yaml").write_text(text + "\n")
    before = snapshot()
    error = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, "--config", "section.yaml", *then))
    key = said.partition(" ")[0]
    assert error == (
        f"error: --config section.yaml: {said}, but it holds options: give them as a mapping, one `option: value` a"
        f" line indented under `{key}:`"
    )
    assert not assert_kept(before, snapshot()) and not Path("runs").exists()


@pytest.mark.parametrize(
    "text,key,base,given",
    [("model: 5", "model", "LightningModule", "5"), ("data: [1, 2]", "data", "LightningDataModule", "[1, 2]")],
    ids=["model", "data"],
)
def test_a_class_given_as_a_number_or_a_list_is_one_line_saying_what_it_takes(text, key, base, given, capsys):
    Path("class.yaml").write_text(text + "\n")
    assert refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, "--config", "class.yaml")) == (
        f"error: --{key}: expected a class path (a {base}) or a mapping with its class_path and init_args, got {given}"
    )
    assert not Path("runs").exists()


def test_a_section_given_as_a_file_of_its_options_still_works():
    Path("trainer.yaml").write_text("max_epochs: 7\n")
    Path("main.yaml").write_text("trainer: trainer.yaml\n")
    cli = run("fit", "--config", "main.yaml", "--trainer.fast_dev_run=true")
    assert cli.config.fit.trainer.max_epochs == 7
