"""Bounded work on hostile files: an alias bomb, a checkpoint naming a module to import, a corrupt or foreign
summary.json, a corrupt sweep database (issue 13, item 7)."""

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
import torch

from lightning_runs.checkpoints.loading import read_checkpoint
from lightning_runs.errors import UsageError
from lightning_runs.tools import sweep
from project.cli import cli_main
from project.model import DigitsClassifier
from support import ROOT, assert_kept, each_row_once_daily, fitted, load, refusal, run, snapshot

SHORT = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
RUN = Path("runs/digits/version_0")


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
    assert expected in refusal(capsys, lambda: run("fit", *SHORT, "--config", path))
    assert time.monotonic() - started < 30, "bounded work: refused before jsonargparse reads it"
    assert not assert_kept(before, snapshot()) and not Path("runs").exists()


def test_a_key_given_twice_inline_is_refused_too(capsys):
    error = refusal(capsys, lambda: run("fit", *SHORT, "--trainer", "{max_epochs: 1, max_epochs: 2}"))
    assert "refusing YAML that gives the key 'max_epochs' twice" in error


def test_aliases_of_ordinary_size_still_work():
    Path("aliases.yaml").write_text("model:\n  lr: &lr 0.002\n  min_lr: *lr\n")
    cli = run("fit", *SHORT, "--config", "aliases.yaml", "--trainer.fast_dev_run=true")
    assert cli.model.hparams.lr == cli.model.hparams.min_lr == 0.002


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return fitted(tmp_path_factory, "hostile", *SHORT)


@pytest.fixture
def runs(trained) -> Path:
    shutil.copytree(trained, "runs")
    return Path("runs")


TAMPERS = [
    ("hyper_parameters", {"network": {"class_path": "this.Zen", "init_args": {}}}, "'this.Zen', which is not a class"),
    ("hyper_parameters", {"network": "this.Zen"}, "'this.Zen', which is not a class"),
    ("hyper_parameters", {"network": {"class_path": "antigravity.Fly"}}, "'antigravity.Fly', which is not a class"),
    ("datamodule_hyper_parameters", {"_class_path": "this.Zen"}, "its datamodule_hyper_parameters name 'this.Zen'"),
]


@pytest.mark.parametrize("section,tamper,expected", TAMPERS)
def test_a_checkpoint_naming_a_module_is_refused_before_that_module_is_imported(
    runs, section, tamper, expected, capsys
):
    checkpoint = load(RUN / "checkpoints/last.ckpt")
    checkpoint[section].update(tamper)
    torch.save(checkpoint, "tampered.ckpt")
    assert "this" not in sys.modules and "antigravity" not in sys.modules
    before = snapshot()
    error = refusal(capsys, lambda: run("test", "--ckpt_path=tampered.ckpt"))
    assert "refusing to load" in error and expected in error
    assert "this" not in sys.modules and "antigravity" not in sys.modules, "imported before being refused"
    assert "Beautiful is better than ugly" not in capsys.readouterr().out
    assert not assert_kept(before, snapshot())


def edited(checkpoint: dict, field: str):
    """Give `field` of the checkpoint a value of another type, as a hand edit might."""
    random_state = next(key for key in checkpoint["callbacks"] if key.startswith("RandomState"))
    edits = {
        "epoch": lambda: checkpoint.update(epoch="3"),
        "hyper_parameters": lambda: checkpoint.update(hyper_parameters=["lr", 0.01]),
        "callbacks": lambda: checkpoint.update(callbacks=list(checkpoint["callbacks"])),
        "loops": lambda: checkpoint.update(loops=None),
        "optimizer": lambda: checkpoint["optimizer_states"][0].update(param_groups={"lr": 0.01}),
        "rng": lambda: checkpoint["callbacks"][random_state].update(torch=[1, 2, 3]),
        "weights": lambda: checkpoint["state_dict"].update({next(iter(checkpoint["state_dict"])): [0.0]}),
    }
    edits[field]()
    return checkpoint


EDITS = {
    "epoch": "its epoch is str, not int",
    "hyper_parameters": "its hyper_parameters is list, not dict",
    "callbacks": "its callbacks is list, not dict",
    "loops": "its loops is NoneType, not dict",
    "optimizer": "its optimizer_states[0]['param_groups'] is dict, not list",
    "rng": "['torch'] is list, not Tensor",
    "weights": "is list, not Tensor",
}


# Each field read by fit and by test: daily, each field once, the two in turn.
@pytest.mark.parametrize("field,subcommand", each_row_once_daily(list(EDITS), ["fit", "test"]))
def test_a_checkpoint_edited_to_hold_a_field_of_the_wrong_type_is_refused_where_it_is_read(
    runs, field, subcommand, capsys
):
    expected = EDITS[field]
    torch.save(edited(load(RUN / "checkpoints/last.ckpt"), field), "edited.ckpt")
    before = snapshot()
    error = refusal(capsys, lambda: run(subcommand, "--ckpt_path=edited.ckpt"))
    assert error.startswith("error: --ckpt_path edited.ckpt: its ") and expected in error
    assert error.endswith(", so it cannot be restored")
    assert not assert_kept(before, snapshot())


@pytest.mark.parametrize("change", ["shape", "missing"])
def test_a_checkpoint_with_weights_of_another_shape_or_missing_ones_is_refused_before_it_is_loaded(
    runs, change, capsys
):
    checkpoint = load(RUN / "checkpoints/last.ckpt")
    name = next(name for name in checkpoint["state_dict"] if name.endswith("weight"))
    if change == "shape":
        checkpoint["state_dict"][name] = torch.zeros(3, 3)
    else:
        del checkpoint["state_dict"][name]
    torch.save(checkpoint, "changed.ckpt")
    before = snapshot()
    error = refusal(capsys, lambda: run("test", "--ckpt_path=changed.ckpt"))
    said = f"its model does not fit this data ({name} is (3, 3) there" if change == "shape" else f"(no {name})"
    assert error.startswith("error: --ckpt_path changed.ckpt: ") and said in error
    assert not assert_kept(before, snapshot())


def test_dotted_strings_of_plain_parameters_are_data_and_real_classes_are_accepted(runs, capsys):
    checkpoint = load(RUN / "checkpoints/last.ckpt")
    # A file named like a module attribute ("test" is a standard-library package) is a path, not a reference.
    checkpoint["datamodule_hyper_parameters"] |= {"_class_path": "project.data.FileDataModule", "path": "test.csv"}
    checkpoint["hyper_parameters"]["network"] = {"class_path": "project.networks.MLP", "init_args": {}}
    torch.save(checkpoint, "plain.ckpt")
    assert read_checkpoint(Path("plain.ckpt"), DigitsClassifier)["datamodule_hyper_parameters"]["path"] == "test.csv"
    checkpoint["hyper_parameters"]["network"] = "project.networks.not_a_class_name"
    torch.save(checkpoint, "function.ckpt")
    with pytest.raises(UsageError, match="which is not a class"):
        read_checkpoint(Path("function.ckpt"), DigitsClassifier)


@pytest.mark.parametrize(
    "content,problem",
    [(b"{not json", "is not JSON"), (b"[1, 2]", "not a run summary"), (b'{"evaluations": 5}', "not a run summary")],
    ids=["corrupt", "a list", "foreign"],
)
def test_a_corrupt_or_foreign_summary_is_kept_aside_and_the_evaluation_goes_on(runs, content, problem):
    summary = RUN / "summary.json"
    summary.write_bytes(content)
    with pytest.warns(UserWarning, match=problem):
        run("test", "--ckpt_path=last")
    assert (RUN / "summary.unreadable.json").read_bytes() == content, "kept, byte for byte"
    assert json.loads(summary.read_text())["evaluations"][0]["subcommand"] == "test"


def test_a_corrupt_sweep_database_is_one_line_and_stays_as_it_was(capsys):
    database = Path("runs/sweeps/broken.db")
    database.parent.mkdir(parents=True)
    database.write_bytes(b"SQLite format 2\0" + bytes(range(256)) * 8)
    Path("configs").symlink_to(ROOT / "configs")  # the sweep's configs, as from the repository's root
    before = snapshot()
    error = refusal(
        capsys, lambda: sweep.main(cli_main, ["--config", str(ROOT / "sweeps/digits.yaml"), "--study=broken"])
    )
    assert f"{database}: not a readable study database (file is not a database)" in error
    assert not assert_kept(before, snapshot())


def test_a_corrupt_sweep_journal_is_one_line_and_stays_as_it_was(capsys):
    journal = Path("runs/sweeps/broken.journal")
    journal.parent.mkdir(parents=True)
    journal.write_text('{"op_code": 99, "worker_id": "w"}\n')  # an operation no Optuna knows
    Path("configs").symlink_to(ROOT / "configs")
    before = snapshot()
    error = refusal(
        capsys, lambda: sweep.main(cli_main, ["--config", str(ROOT / "sweeps/digits.yaml"), "--study=broken"])
    )
    assert f"{journal.resolve()}: not a readable study journal (" in error
    assert not assert_kept(before, snapshot())
