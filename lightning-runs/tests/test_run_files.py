"""No option makes one file of a run replace another (issue 31, item 2): `--summary.filename checkpoints/last.ckpt`
turned last.ckpt into JSON, `--last_checkpoint.filename best` left one checkpoint for both, `--summary.filename
config.yaml` replaced the saved config, exit 0. Every name an option gives is checked against every other, and
against the names the stack fixes, before anything runs: one line naming both, exit 2, nothing written. A run's
folder that is a file in runs/ (its name, or the version given) was a FileExistsError traceback (issue 31, item 5)."""

import itertools
from fnmatch import fnmatch
from pathlib import Path

import pytest
from tiny_runs import assert_kept, each_row_once_daily, refusal, run, snapshot

from lightning_runs.folders.files import CHECKPOINTS, FIXED

ONE_EPOCH_TWO_BATCHES = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
# Each option that names a file of the run, and the file it names by default.
DEFAULTS = {
    "checkpoint.filename": "checkpoints/best.ckpt",
    "last_checkpoint.filename": "checkpoints/last.ckpt",
    "summary.filename": "summary.json",
    "prediction_writer.filename": "predictions.csv",
}


def value_naming(option: str, path: str) -> str | None:
    """What `option` takes to name `path` (a checkpoint's name is a stem inside checkpoints/), or None: it cannot."""
    if option in ("checkpoint.filename", "last_checkpoint.filename"):
        inside = Path(path).parent == Path(CHECKPOINTS) and path.endswith(".ckpt")
        return Path(path).stem if inside else None
    return path


# Every pair of options, the first given the second's default file (or, where it cannot name it, the reverse).
PAIRS = []
for one, other in itertools.combinations(DEFAULTS, 2):
    if (value := value_naming(one, DEFAULTS[other])) is not None:
        PAIRS.append((one, value, other))
    else:
        PAIRS.append((other, value_naming(other, DEFAULTS[one]), one))


def refused(capsys, *args: str) -> str:
    before = snapshot()
    error = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, *args))
    assert not assert_kept(before, snapshot()), "a refused command wrote files"
    assert not Path("runs").exists(), "a run folder was left"
    return error


@pytest.mark.parametrize("given,value,other", PAIRS, ids=[f"{g}={v} vs {o}" for g, v, o in PAIRS])
def test_two_options_naming_one_file_of_the_run_are_refused_naming_both(given, value, other, capsys):
    error = refused(capsys, f"--{given}", value)
    assert f"--{given} {value}" in error and f"--{other} " in error and "give one of them another name" in error


# The issue's cases, as written.
@pytest.mark.parametrize(
    "args,expected",
    [
        (["--summary.filename", "checkpoints/last.ckpt"], "--last_checkpoint.filename last and --summary.filename"),
        (["--last_checkpoint.filename", "best"], "--checkpoint.filename best and --last_checkpoint.filename best"),
        (["--checkpoint.filename", "last"], "--checkpoint.filename last and --last_checkpoint.filename last"),
        (
            ["--summary.filename", "config.yaml"],
            "--summary.filename config.yaml: config.yaml is the run's saved config",
        ),
        (["--prediction_writer.filename", "checkpoints/best.ckpt"], "--checkpoint.filename best and"),
        # Lightning's own last.ckpt of the best checkpoint, the predictions' array beside their CSV, a file where the
        # checkpoints' folder goes.
        (["--checkpoint.save_last", "true"], "--checkpoint.save_last True and --last_checkpoint.filename last"),
        (["--summary.filename", "predictions.npy"], "and --prediction_writer.filename predictions.csv both name"),
        (["--summary.filename", "checkpoints"], "both name checkpoints in the run folder"),
        (["--summary.filename", "./checkpoints//best.ckpt"], "both name checkpoints/best.ckpt"),
    ],
    ids=[
        "summary as last",
        "last as best",
        "best as last",
        "summary as config",
        "predictions as best",
        "save_last",
        "predictions' array",
        "a file for a folder",
        "spelt otherwise",
    ],
)
def test_the_issues_collisions_are_one_line_exit_2_and_nothing_written(args, expected, capsys):
    assert expected in refused(capsys, *args)


FIXED_NAMES = ["config.yaml", "config.test.yaml", "hparams.yaml", "metrics.csv", "events.out.tfevents.1.host.2.0"]


NAMING_OPTIONS = ["summary.filename", "prediction_writer.filename"]


@pytest.mark.parametrize("name,option", each_row_once_daily(FIXED_NAMES, NAMING_OPTIONS))
def test_a_name_the_stack_fixes_is_no_options_to_take(name, option, capsys):
    assert f"--{option} {name}: {name} is " in refused(capsys, f"--{option}", name)


@pytest.mark.slow
def test_names_of_their_own_are_accepted_and_each_file_written_is_in_the_registry(capsys):
    """Every file a fit and a predict leave in the run is one an option names or one the registry fixes."""
    names = ["--summary.filename=record.json", "--checkpoint.filename=top", "--prediction_writer.filename=out/p.csv"]
    run("fit", *ONE_EPOCH_TWO_BATCHES, "--trainer.limit_val_batches=1", *names)
    folder = Path("runs/tiny/version_0")
    run("predict", f"--ckpt_path={folder / 'checkpoints/last.ckpt'}", *names)
    named = {"record.json", "checkpoints/top.ckpt", "checkpoints/last.ckpt", "out/p.csv"}
    written = {str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file()}
    assert named <= written
    unknown = [p for p in written - named if not any(fnmatch(p, pattern) for pattern in FIXED)]
    assert not unknown, f"files the registry (folders/files.py) does not list: {unknown}"


@pytest.mark.parametrize(
    "args,file,key",
    [
        (["--trainer.logger.init_args.name=X"], "runs/X", "name"),
        ([], "runs/tiny", "name"),  # the name the run would get from its data
        (["--trainer.logger.init_args.version=v"], "runs/tiny/v", "version"),
    ],
    ids=["name_given", "name_from_the_data", "version_given"],
)
def test_a_run_folder_that_is_a_file_in_runs_is_refused_and_the_file_kept(args, file, key, capsys):
    Path(file).parent.mkdir(parents=True)
    Path(file).write_text("notes\n")
    before = snapshot()
    error = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES, *args))
    assert error == (
        f"error: --trainer.logger.init_args.{key} {Path(file).name}: {file} is a file, not a run folder; give"
        f" another {key}, or move the file out of {Path(file).parent}"
    )
    assert snapshot() == before


@pytest.mark.parametrize(("link", "option"), [("runs/tiny", "name tiny"), ("runs", "save_dir runs")])
def test_a_run_folder_or_runs_root_that_is_a_link_to_nowhere_is_refused_and_the_link_kept(link, option, capsys):
    Path(link).parent.mkdir(parents=True, exist_ok=True)
    Path(link).symlink_to("/nonexistent")
    error = refusal(capsys, lambda: run("fit", *ONE_EPOCH_TWO_BATCHES))
    assert error.startswith(f"error: --trainer.logger.init_args.{option}: {link} is a link to /nonexistent")
    assert Path(link).is_symlink() and not Path("/nonexistent").exists()
