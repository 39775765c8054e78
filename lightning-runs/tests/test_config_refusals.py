"""A config of the wrong shape, or hostile, is one line, exit 2, before anything is written, with bounded work (issues
13 item 7, 31 item 5): YAML nested 10,000 levels deep was a RecursionError traceback, `trainer: [1, 2]` an
AttributeError (or dropped without a word when an option such as --trainer.max_epochs followed), `model: 5`
jsonargparse's nine lines about Union subtypes; an alias bomb, a FIFO, a huge file or a key given twice are refused
before jsonargparse reads them."""

import os
import time
from pathlib import Path

import pytest
from tiny_runs import assert_kept, refusal, run, snapshot

ONE_EPOCH_TWO_BATCHES = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
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
    assert error == f"error: --model.lr: expected float, got {nested('lists', 98, '0.1')}"


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


def alias_bomb(levels: int) -> str:
    """A few hundred bytes whose aliases expand to 9**levels values (nine lists of nine lists of ...)."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join([*lines, f"model:\n  lr: *a{levels - 1}"]) + "\n"


@pytest.mark.parametrize(
    "yaml_text,expected",
    [
        (alias_bomb(7), "refusing YAML whose aliases expand to more than 100,000 values"),  # 4.8 million values
        ("a: &a [1, *a]\nmodel:\n  lr: *a\n", "refusing YAML with a recursive alias"),
    ],
    ids=["billion laughs", "recursive"],
)
def test_a_yaml_alias_bomb_is_refused_before_it_expands(yaml_text, expected, capsys):
    Path("bomb.yaml").write_text(yaml_text)
    before = snapshot()
    assert expected in refusal(capsys, lambda: run("fit", "--config", "bomb.yaml"))
    assert not assert_kept(before, snapshot())


def config_file(kind: str) -> str:
    """A --config that is not a config of ordinary size: its path."""
    path = Path(f"{kind}.yaml")
    if kind == "fifo":  # reading it would wait for a writer forever
        os.mkfifo(path)
    elif kind == "huge":  # 4.6 MB: jsonargparse took more than 200 s over 300,000 keys
        path.write_text("".join(f"k{i}: {i}\n" for i in range(300_000)))
    elif kind == "many_keys":  # under the byte limit, past the key limit
        path.write_text("".join(f"k{i}: 1\n" for i in range(12_000)))
    elif kind == "twice":
        path.write_text("trainer:\n  max_epochs: 1\nmodel:\n  lr: 0.1\ntrainer:\n  max_epochs: 2\n")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    return str(path)


CONFIG_FILES = [
    ("fifo", "--config fifo.yaml: not a regular file (a pipe or a device); give a YAML file"),
    ("huge", "--config huge.yaml: 4,577,780 bytes, more than the 1,000,000 a config may hold"),
    ("many_keys", "--config many_keys.yaml: refusing YAML of more than 10,000 keys"),
    ("twice", "--config twice.yaml: refusing YAML that gives the key 'trainer' twice (lines 1 and 5)"),
    ("binary", "--config binary.yaml: not a YAML text file (byte 128 is not UTF-8)"),
]


@pytest.mark.parametrize("kind,expected", CONFIG_FILES, ids=[case[0] for case in CONFIG_FILES])
def test_a_config_file_that_is_no_file_too_large_or_ambiguous_is_refused_before_it_is_parsed(kind, expected, capsys):
    path = config_file(kind)
    before = snapshot()
    started = time.monotonic()
    assert expected in refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, "--config", path))
    assert time.monotonic() - started < 30, "bounded work: refused before jsonargparse reads it"
    assert not assert_kept(before, snapshot()) and not Path("runs").exists()


def test_a_key_given_twice_inline_is_refused_too(capsys):
    error = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, "--trainer", "{max_epochs: 1, max_epochs: 2}"))
    assert "refusing YAML that gives the key 'max_epochs' twice" in error


def test_aliases_of_ordinary_size_still_work():
    Path("aliases.yaml").write_text("data:\n  n: &n 64\n  batch_size: *n\n")
    cli = run("fit", *ONE_EPOCH_TWO_BATCHES, "--config", "aliases.yaml", "--trainer.fast_dev_run=true")
    assert cli.datamodule.hparams.n == cli.datamodule.hparams.batch_size == 64
