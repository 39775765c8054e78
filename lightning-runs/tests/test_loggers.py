"""CSV, MLflow and W&B instead of TensorBoard (`--trainer.logger=lightning_runs.loggers.<Logger>`), offline: what each
keeps of a run, read back the way its own tools read it, and a run that crashes, resumes with `--ckpt_path last` and
is tested with `--ckpt_path best` continuing one run of that logger in one run folder. Here what every logger keeps,
the CSV logger, and a missing logger package; MLflow and W&B in test_loggers_mlflow.py and test_loggers_wandb.py,
on the helpers of this file. Each logger's runs are made once per module (slow tests)."""

import csv
import json
import sys
from pathlib import Path

import pytest
import torch
import yaml
from tiny_runs import QUIET, command, run

from lightning_runs.loggers import trackers
from tiny_tasks import BiasOptionClassifier

LOGGERS = {"csv": "CSVRunLogger", "mlflow": "MLFlowRunLogger", "wandb": "WandbRunLogger"}


class Drawn(BiasOptionClassifier):
    """A classifier with a boolean hyperparameter (bias) that declares one picture: its weights as an image."""

    def figures(self, stage: str) -> dict:
        return {"weights": self.layer.weight.detach().sigmoid()} if stage != "train" else {}  # (classes, features)


TASK = ["--data=tiny_tasks.TinyImages", "--model=test_loggers.Drawn"]
# 3 epochs of 3 steps; pictures and histograms every 2 epochs (after step 6), and the end of fit's at step 9.
SHORT = [
    "--trainer.max_epochs=3",
    "--trainer.limit_train_batches=3",
    "--figures.every_n_epochs=2",
    "--histograms.every_n_epochs=2",
    "--histograms.gradients=true",
]
STEPS, EPOCH_ENDS = 9, [2, 5, 8]  # Lightning logs epoch metrics at the index of the epoch's last step
CRASH = [
    "--trainer.callbacks+=lightning_runs.testing.CrashAt",
    "--trainer.callbacks.step=6",
]  # as epoch 3 begins: last at 6
NAME = "tiny"  # the tiny task's runs: runs/tiny/version_N
RUN = Path(f"runs/{NAME}/version_0")


def logger_option(logger: str) -> str:
    return f"--trainer.logger=lightning_runs.loggers.{LOGGERS[logger]}"


def crash_resume_and_test(home: Path, logger: str) -> Path:
    """fit (crashes as its third epoch begins); fit --ckpt_path last --test_best true (finishes it, then tests its
    best checkpoint in the same process); test --ckpt_path best (a command of its own)."""
    with pytest.MonkeyPatch.context() as env:
        env.chdir(home)
        env.setenv("WANDB_CACHE_DIR", str(home / "wandb-cache"))  # W&B's debug logs: in $HOME by default
        config = [logger_option(logger), *TASK, *SHORT]
        with pytest.raises(RuntimeError, match="crash at step 6"):
            run("fit", *config, *CRASH)
        assert torch.load(RUN / "checkpoints/last.ckpt", weights_only=True)["global_step"] == 6
        run("fit", *config, "--ckpt_path=last", "--test_best=true")
        run("test", *config, "--ckpt_path=best")
    return home


def assert_one_run_folder_with_checkpoints_config_and_summary(home: Path) -> None:
    assert [p.name for p in (home / RUN).parent.iterdir()] == ["version_0"], "the resume and the test went there"
    files = {p.relative_to(home / RUN).as_posix() for p in (home / RUN).rglob("*") if "wandb" not in p.parts}
    assert {"checkpoints/best.ckpt", "checkpoints/last.ckpt", "summary.json"} <= files
    assert {"config.yaml", "config.fit.yaml", "config.test.yaml"} <= files  # each command's config, none clobbered
    summary = json.loads((home / RUN / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["global_step"] == STEPS
    assert [e["subcommand"] for e in summary["evaluations"]] == ["test", "test"]


# What sets a run apart, in each logger's own parameters: the trainer's settings, booleans as booleans (MLflow keeps
# every parameter as text), and none of LightningCLI's keys (`_instantiator`).
SETTINGS = {
    "trainer/max_epochs": 3,
    "trainer/precision": "32-true",
    "trainer/devices": 1,
    "trainer/accumulate_grad_batches": 1,
    "trainer/gradient_clip_val": None,
    "bias": True,
}


def assert_the_trainer_settings_with_booleans_as_booleans_and_no_lightningcli_keys(params: dict, text: bool) -> None:
    """`params`: the run's parameters as the logger's own tools show them, nested keys joined with `/`; `text`: the
    logger keeps every value as text."""
    expected = {k: str(v) for k, v in SETTINGS.items()} if text else SETTINGS
    assert {key: params.get(key) for key in SETTINGS} == expected
    assert not [key for key in params if key.startswith("_")]


def flat(params: dict, prefix: str = "") -> dict:
    found = {}
    for key, value in params.items():
        found |= flat(value, f"{prefix}{key}/") if isinstance(value, dict) else {f"{prefix}{key}": value}
    return found


# CSV: metrics.csv and hparams.yaml; no pictures.


@pytest.fixture(scope="module")
def csv_home(tmp_path_factory) -> Path:
    return crash_resume_and_test(tmp_path_factory.mktemp("csv"), "csv")


def csv_metrics(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open() as file:
        return list(csv.DictReader(file))


def csv_steps(rows: list[dict[str, str]], column: str) -> list[int]:
    return [int(row["step"]) for row in rows if row.get(column)]


@pytest.mark.slow
def test_csv_keeps_one_run_folder_with_checkpoints_config_and_summary(csv_home):
    assert_one_run_folder_with_checkpoints_config_and_summary(csv_home)


@pytest.mark.slow
def test_csv_has_the_trainer_settings_with_booleans_as_booleans_and_no_lightningcli_keys(csv_home):
    params = flat(yaml.safe_load((csv_home / RUN / "hparams.yaml").read_text()))
    assert_the_trainer_settings_with_booleans_as_booleans_and_no_lightningcli_keys(params, text=False)


@pytest.mark.slow
def test_csv_has_every_step_once_across_the_crash_and_the_resume(csv_home):
    rows = csv_metrics(csv_home / RUN)
    assert csv_steps(rows, "train/loss") == list(range(STEPS))
    assert csv_steps(rows, "lr-Adam") == list(range(STEPS))
    assert csv_steps(rows, "val/loss") == EPOCH_ENDS
    # At the fit's last step when tested in its process; at 0 by a `test` command (it restores the weights only).
    assert csv_steps(rows, "test/loss") == [STEPS, 0]
    assert {"hp/best_val_loss", "hp/test_loss", "train/grad_norm"} <= set(rows[0])


@pytest.mark.slow
def test_csv_keeps_the_hyperparameters_and_no_pictures(csv_home):
    hparams = yaml.safe_load((csv_home / RUN / "hparams.yaml").read_text())
    assert hparams["lr"] == 0.05 and hparams["batch_size"] == 32  # the tiny task's defaults
    assert not [p for p in (csv_home / RUN).rglob("*") if p.suffix in (".png", ".webp")]


def test_lightnings_own_csv_logger_is_refused_for_the_one_that_keeps_a_reopened_metrics_csv(capsys):
    """Lightning's CSVLogger deletes the run's metrics.csv when a resume or a test opens the run again."""
    from tiny_runs import refusal

    line = refusal(capsys, lambda: run("fit", "--trainer.logger=lightning.pytorch.loggers.CSVLogger",
                                       "--trainer.logger.save_dir=runs"))  # fmt: skip
    assert line.endswith("lightning_runs.loggers (CSVRunLogger for CSV files)")
    assert not Path("runs").exists()


def filled(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Each row's cells that hold a value (a header that grew adds empty cells to the rows before)."""
    return [{key: value for key, value in row.items() if value} for row in rows]


# Without the extra: one line, nothing left behind.


@pytest.mark.parametrize("logger", ["mlflow", "wandb"])
def test_a_logger_whose_package_is_missing_is_one_line_naming_the_extra(logger, monkeypatch, capsys):
    monkeypatch.setattr(trackers, {"mlflow": "_MLFLOW_AVAILABLE", "wandb": "_WANDB_AVAILABLE"}[logger], False)
    for name in [name for name in sys.modules if name == logger or name.startswith(f"{logger}.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed: importing it raises ImportError
    monkeypatch.setitem(sys.modules, logger, None)
    with pytest.raises(SystemExit) as exit:
        run("fit", logger_option(logger), "--trainer.max_epochs=1")
    assert exit.value.code == 2
    assert f"needs {logger}: pip install 'lightning-runs[loggers]'" in capsys.readouterr().err
    assert not Path("runs").exists()


def ddp_fit(home: Path, logger: str) -> Path:
    """2 processes on CPU, 2 epochs of 3 steps each (Lightning launches the second rank: a process of its own); the
    run folder."""
    ddp = ["--trainer.strategy=ddp", "--trainer.devices=2", "--trainer.accelerator=cpu"]
    args = [logger_option(logger), *QUIET, *ddp, "--trainer.max_epochs=2", "--trainer.limit_train_batches=3"]
    result = command("fit", *args, cwd=home)
    assert result.returncode == 0, result.stderr[-4000:]
    assert [p.name for p in (home / "runs/tiny").iterdir()] == ["version_0"]
    return home / "runs/tiny/version_0"


# TensorBoardRunLogger: TensorBoard's events, written cheaper.


def _scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(s.step, s.value) for s in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_tensorboard_run_logger_writes_what_lightnings_writes_in_a_plain_trainer(tmp_path):
    import lightning as L
    from lightning.pytorch.callbacks import LearningRateMonitor
    from lightning.pytorch.loggers import TensorBoardLogger

    from lightning_runs.faults import GradientCheck
    from lightning_runs.loggers import TensorBoardRunLogger
    from tiny_tasks import TinyClassifier, TinyDataModule

    written = {}
    for name, logger in (("lightning", TensorBoardLogger), ("ours", TensorBoardRunLogger)):
        L.seed_everything(0)
        trainer = L.Trainer(max_epochs=2, limit_train_batches=3, log_every_n_steps=1, logger=logger(tmp_path, name),
                            callbacks=[GradientCheck(), LearningRateMonitor("step")], enable_progress_bar=False,
                            enable_model_summary=False, enable_checkpointing=False)  # fmt: skip
        trainer.fit(TinyClassifier(), TinyDataModule())
        written[name] = _scalars(trainer.logger.log_dir)
    assert written["ours"] == written["lightning"]
    assert {"train/loss", "train/grad_norm", "lr-Adam", "val/acc"} <= set(written["ours"])
    assert len(written["ours"]["train/grad_norm"]) == 6


def test_tensorboard_run_logger_flushes_every_few_seconds_and_at_the_end(tmp_path, monkeypatch):
    from lightning_runs.loggers import TensorBoardRunLogger

    for seconds, expected in ((3600, 1), (0, 20)):
        logger = TensorBoardRunLogger(tmp_path, str(seconds), flush_seconds=seconds, prefix="fold0")
        flushes, flush = [], logger.experiment.flush
        counted = lambda flushes=flushes, flush=flush: flushes.append(1) or flush()  # noqa: E731
        monkeypatch.setattr(logger.experiment, "flush", counted)  # counted, then done
        for step in range(20):  # as Lightning calls them: the step's scalars, then save()
            logger.log_metrics({"loss": 1.0 / (step + 1), "acc": torch.tensor(0.5)}, step=step)
            logger.save()
        assert len(flushes) == expected
        assert (Path(logger.log_dir) / "hparams.yaml").is_file()  # written by the first save(), as Lightning's
        logger.finalize("success")
        assert [step for step, _ in _scalars(logger.log_dir)["fold0-loss"]] == list(range(20))
