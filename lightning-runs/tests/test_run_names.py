"""A run is named, never searched for: `runs/<name>/version_N`, the name `--name`, else the logger's `name`, else the
first `--config` file's stem, else the project's default; `--ckpt_path last|best` is that file of the name's newest run,
and any run or checkpoint is also named by its path. An evaluation of a run's checkpoint reads the run's own config.yaml
first, so a checkpoint alone rebuilds its model and data, and it writes into that run."""

from pathlib import Path

import pytest
import yaml
from tiny_runs import refusal, run

from lightning_runs.testing import CrashAt

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]
ONE_STEP = ["--trainer.max_steps=1"]  # where the folder a fit starts in is all a test reads


def folder(cli) -> Path:
    return Path(cli.trainer.logger.log_dir)


def test_the_name_is_the_one_given_else_the_first_configs_stem_else_the_projects_default():
    Path("lr_small.yaml").write_text("model:\n  lr: 0.01\n")
    Path("longer.yaml").write_text("trainer:\n  max_epochs: 1\n")
    assert folder(run("fit", *ONE_STEP)) == Path("runs/tiny/version_0")
    assert folder(run("fit", *ONE_STEP)) == Path("runs/tiny/version_1"), "the same name: the next version"
    assert folder(run("fit", *ONE_STEP, "--name=mine")) == Path("runs/mine/version_0")
    configs = ["--config=lr_small.yaml", "--config=longer.yaml"]
    assert folder(run("fit", *configs, *ONE_STEP)) == Path("runs/lr_small/version_0")
    assert folder(run("fit", *configs, *ONE_STEP, "--name=given")) == Path("runs/given/version_0")
    assert folder(run("fit", *ONE_STEP, "--trainer.logger.init_args.name=logged")) == Path("runs/logged/version_0")
    saved = yaml.safe_load(Path("runs/lr_small/version_0/config.yaml").read_text())
    assert saved["name"] == saved["trainer"]["logger"]["init_args"]["name"] == "lr_small"


def test_last_is_the_newest_run_of_the_name_and_never_another_names():
    with pytest.raises(RuntimeError, match="crash"):
        run("fit", *SHORT, "--name=one", callbacks=[CrashAt(step=2)])
    with pytest.raises(RuntimeError, match="crash"):
        run("fit", *SHORT, "--name=two", callbacks=[CrashAt(step=3)])
    resumed = run("fit", *SHORT, "--name=one", "--ckpt_path=last")
    assert folder(resumed) == Path("runs/one/version_0") and resumed.trainer.global_step == 4
    assert sorted(p.name for p in Path("runs").iterdir()) == ["one", "two"], "no new run, and two is untouched"


def test_a_first_fit_with_last_starts_from_step_0_and_an_evaluation_without_a_run_is_one_line(capsys):
    first = run("fit", *SHORT, "--name=fresh", "--ckpt_path=last")
    assert first.trainer.global_step == 4 and folder(first) == Path("runs/fresh/version_0")
    assert "No runs/fresh/version_*/checkpoints/last.ckpt yet: starting from step 0." in capsys.readouterr().out
    error = refusal(capsys, lambda: run("test", "--name=none", "--ckpt_path=best"))
    assert error == "error: --ckpt_path best: no runs/none/version_*/checkpoints/best.ckpt; train first"


def test_a_checkpoint_alone_rebuilds_the_model_and_data_its_run_trained_and_writes_into_that_run():
    other = ["--model=tiny_tasks.SlowTinyClassifier", "--model.lr=0.02", "--data.seed=5", "--data.batch_size=16"]
    fitted = run("fit", *SHORT, *other)
    best = folder(fitted) / "checkpoints/best.ckpt"
    tested = run("test", f"--ckpt_path={best}")  # no --model, no --data: the run's config.yaml says them
    assert type(tested.model).__name__ == "SlowTinyClassifier" and tested.model.hparams.lr == 0.02
    assert (tested.datamodule.hparams.seed, tested.datamodule.hparams.batch_size) == (5, 16)
    assert folder(tested) == folder(fitted) and (folder(fitted) / "config.test.yaml").is_file()
    again = run("test", "--ckpt_path=best")  # by name: the newest run of `tiny`, the same checkpoint
    assert folder(again) == folder(fitted) and (folder(fitted) / "config.test-1.yaml").is_file()


def test_a_name_that_is_no_folder_name_is_refused(capsys):
    assert "must be one folder name" in refusal(capsys, lambda: run("fit", *SHORT, "--name=a/b"))
    assert not Path("runs").exists()
