"""Bad input is one clear line and a non-zero exit, never a traceback or a silent fresh start: a bad config exits 2 at
parse time before any run folder exists; a bad checkpoint is refused naming the file and what is wrong with it, and one
whose hyperparameters name a function that runs code is never loaded (jsonargparse's own import denylist, enforced);
a resume that contradicts its run is refused naming the options; an evaluation takes the data it is given."""

import os
from pathlib import Path

import pytest
import torch
import yaml
from tiny_runs import load, refusal, run

from lightning_runs.errors import main
from lightning_runs.tools import export

RUN = Path("runs/tiny/version_0")
LAST = RUN / "checkpoints/last.ckpt"
TYPED = ["--model=tiny_typed.TypedClassifier", "--data=tiny_typed.TypedPoints"]  # typed and checked arguments


def bad_checkpoints(folder: Path) -> dict[str, tuple[Path, str]]:
    real = folder / "real.ckpt"
    torch.save({"state_dict": {}, "epoch": 0}, real)
    data = real.read_bytes()
    files = {"truncated": data[: len(data) // 2], "empty": b"", "random": os.urandom(4096)}
    for name, content in files.items():
        (folder / f"{name}.ckpt").write_bytes(content)
    return {
        "truncated": (folder / "truncated.ckpt", "not a readable checkpoint"),
        "empty": (folder / "empty.ckpt", "not a readable checkpoint"),
        "random": (folder / "random.ckpt", "not a readable checkpoint"),
        "missing": (folder / "missing.ckpt", "no such file"),
    }


@pytest.mark.parametrize("kind", ["truncated", "empty", "random", "missing"])
@pytest.mark.parametrize("subcommand", ["fit", "test"])
def test_a_bad_checkpoint_is_refused_with_its_name_and_the_problem(kind, subcommand, tmp_path, capsys):
    folder = tmp_path / "given"
    folder.mkdir()
    path, problem = bad_checkpoints(folder)[kind]
    with pytest.raises(SystemExit) as exit_:
        run(subcommand, f"--ckpt_path={path}")
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: ") and str(path) in error and problem in error
    assert not Path("runs").exists(), "nothing started"


def test_a_corrupt_last_checkpoint_is_refused_not_skipped(capsys):
    LAST.parent.mkdir(parents=True)
    LAST.write_bytes(b"\x00" * 100)
    with pytest.raises(SystemExit) as exit_:
        run("fit", "--ckpt_path=last")
    assert exit_.value.code == 2 and str(LAST) in capsys.readouterr().err


BAD_CONFIGS = [
    (["--model.learning_rate=0.1"], "unknown option --model.learning_rate"),
    (["--trainer.max_epochs=ten"], "--trainer.max_epochs: "),
    (["--config=missing.yaml"], "missing.yaml"),
    (["--model.network=tiny_typed.NoSuchNet"], "NoSuchNet"),
    (["--model.network=os.system"], "os.system may not be imported"),  # code to run: jsonargparse's denylist
    (["--model.lr=0"], "--model.lr: "),
    (["--model.lr=-0.1"], "--model.lr: "),
    (["--data.batch_size=0"], "--data.batch_size: "),
    (["--model.min_lr=0.1"], "--model.min_lr 0.1: above --model.lr 0.05"),  # two arguments, checked in __init__
    (["--model.warmup_fraction=1.5"], "--model.warmup_fraction: "),  # a restricted type of the module's own
]


@pytest.mark.parametrize("args,expected", BAD_CONFIGS)
def test_a_bad_config_exits_2_with_one_clear_line_before_creating_anything(args, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        run("fit", *TYPED, *args)
    assert exit_.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and expected in errors[0], errors
    assert not Path("runs").exists() or not any(Path("runs").rglob("*")), "no run directory"


@pytest.mark.parametrize("seed", [2**40, -1], ids=["2**40", "negative"])
def test_a_seed_numpy_cannot_take_is_one_line_at_parse_with_the_range(seed, capsys):
    """Lightning's seed_everything raised its ValueError past the parse: a traceback."""
    error = refusal(capsys, lambda: run("fit", f"--seed_everything={seed}"))
    assert error == f"error: --seed_everything {seed}: a seed is from 0 to 4294967295"
    assert not Path("runs").exists()


CONFIG_FILES = {  # jsonargparse: a traceback, "Unexpected config:", or a wait; and the line that says what is wrong
    "UTF-16": ("trainer:\n  max_epochs: 1\n".encode("utf-16"), "not UTF-8 text (invalid start byte at byte 0)"),
    "binary": (b"\x8c\xda\x00\xff" * 100, "not UTF-8 text (invalid start byte at byte 0)"),
    "a 5,000-digit integer": (b"trainer:\n  max_epochs: " + b"9" * 5000, "not YAML (Exceeds the limit (4300 digits)"),
    "empty": (b"", "empty"),
    "over 10 MB": (b"#" * 10_000_001, "larger than 10,000,000 bytes"),
    "a FIFO": (None, "not a regular file"),  # jsonargparse waited on it for a writer
    # PyYAML kept the last of a key given twice, silently; jsonargparse walked an alias bomb's 9**8 lists for minutes.
    "a key given twice": (
        b"trainer:\n  max_epochs: 1\ntrainer:\n  max_epochs: 2\n",
        "not YAML (the key 'trainer' given",
    ),
    "an alias bomb": (
        "\n".join(
            ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
            + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
        ).encode(),
        "expands to more than 100,000 values",
    ),
    "a trainer that is no mapping": (b"trainer: 3\n", "its trainer is a YAML int, not a mapping"),  # an AttributeError
}


@pytest.mark.parametrize("kind", CONFIG_FILES)
def test_a_config_file_that_is_not_utf8_yaml_is_one_line_naming_it(kind, capsys):
    content, problem = CONFIG_FILES[kind]
    if content is None:
        os.mkfifo("bad.yaml")
    else:
        Path("bad.yaml").write_bytes(content)
    error = refusal(capsys, lambda: run("fit", "--config=bad.yaml"))
    assert error.startswith(f"error: bad.yaml: {problem}") and "a --config file is UTF-8 YAML" in error, error
    assert sorted(Path().iterdir()) == [Path("bad.yaml")], "nothing written"


def test_a_resume_contradicting_its_run_is_refused_and_an_evaluation_takes_the_data_it_is_given(capsys):
    run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=3", "--model.lr=0.002", "--data.seed=3")
    error = refusal(capsys, lambda: run("fit", "--trainer.max_epochs=2", f"--ckpt_path={LAST}", "--model.lr=0.05"))
    assert "--model.lr 0.05 (the run: 0.002)" in error and "--trainer.max_epochs 2 (the run: 1)" in error
    assert "a resumed run continues" in error and "drop --ckpt_path to start a new run" in error

    # An evaluation of the run's checkpoint is parsed with the run's config first: its model, its data unless given.
    evaluated = run("test", f"--ckpt_path={LAST}", "--data.seed=0")
    assert (evaluated.model.hparams.lr, evaluated.datamodule.hparams.seed) == (0.002, 0)
    assert yaml.safe_load((RUN / "config.test.yaml").read_text())["data"]["init_args"]["seed"] == 0
    saved = yaml.safe_load((RUN / "config.yaml").read_text())
    assert (saved["model"]["init_args"]["lr"], saved["data"]["init_args"]["seed"]) == (0.002, 3), "the fit's kept"


@pytest.fixture(scope="module")
def typed_checkpoint(tmp_path_factory) -> dict:
    """The last checkpoint of a short fit of the typed task, whose `network` hyperparameter is a class path."""
    home = tmp_path_factory.mktemp("typed")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        run("fit", *TYPED, "--trainer.max_epochs=1", "--trainer.limit_train_batches=2")
    (last,) = home.glob("runs/*/version_0/checkpoints/last.ckpt")
    return load(last)


@pytest.mark.parametrize(
    "tamper", [{"network": "os.system"}, {"network": {"class_path": "os.system", "init_args": {}}}]
)
def test_a_checkpoint_whose_hyperparameters_name_a_function_that_runs_code_is_refused(
    typed_checkpoint, tamper, tmp_path, capsys, monkeypatch
):
    checkpoint = {**typed_checkpoint, "hyper_parameters": {**typed_checkpoint["hyper_parameters"], **tamper}}
    torch.save(checkpoint, tmp_path / "tampered.ckpt")
    monkeypatch.setattr(os, "system", lambda *_: pytest.fail("os.system was called"))
    error = refusal(capsys, lambda: run("test", *TYPED, f"--ckpt_path={tmp_path}/tampered.ckpt"))
    assert error == "error: --model.network: os.system may not be imported from a value (it runs code)"
    with pytest.raises(SystemExit) as exit_:
        export_main(None, [f"--ckpt_path={tmp_path}/tampered.ckpt", "--format=pt2"])
    assert exit_.value.code == 2 and "os.system may not be imported" in capsys.readouterr().err


def test_a_checkpoint_naming_another_instantiator_is_never_called(typed_checkpoint, tmp_path, monkeypatch):
    """Export builds the module as predict does (the CLI's parse), never by `load_from_checkpoint`: a checkpoint's
    `_instantiator` is not read at all (Lightning's allowlist refused it before)."""
    hparams = {**typed_checkpoint["hyper_parameters"], "_instantiator": "os.system"}
    torch.save({**typed_checkpoint, "hyper_parameters": hparams}, tmp_path / "tampered.ckpt")
    monkeypatch.setattr(os, "system", lambda *_: pytest.fail("os.system was called"))
    assert export_main(None, [f"--ckpt_path={tmp_path}/tampered.ckpt", "--format=pt2"]).is_file()


def export_main(cli_main, args: list[str]):
    return main(lambda: export.main(cli_main, args))
