"""The run's default monitors follow what a module logs: `val_loss` as Lightning's docs name it as well as `val/loss`,
and early stopping the best checkpoint's metric where the module logs no loss; its test scores reach summary.json
under either naming, and a resume restores their states. (A monitor the user names and the module does not log is
refused: test_library.py.)"""

import json
from pathlib import Path

import pytest
import torch
from lightning.pytorch.callbacks import Callback, EarlyStopping
from tiny_stops import CrashAt

from lightning_runs.errors import main
from tiny_tasks import TinyClassifier, cli_main

QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3"]


class AccuracyOnly(TinyClassifier):
    """Logs `val/acc` and `test/acc`, no loss."""

    def _evaluate(self, batch, stage: str):
        samples, labels = batch
        self.accuracy[stage].update(self(samples), labels)
        self.log(f"{stage}/acc", self.accuracy[stage])


def run(*args: str):
    return main(lambda: cli_main([*args[:1], *QUIET, *args[1:]]))


def monitors(cli) -> dict[str, tuple[str, str]]:
    return {type(c).__name__: (c.monitor, c.mode) for c in cli.trainer.callbacks if getattr(c, "monitor", None)}


def test_a_module_logging_val_loss_as_lightnings_docs_name_it_is_watched_on_it_and_its_test_scores_recorded(capsys):
    fitted = run("fit", *SHORT, "--model", "tiny_tasks.UnderscoreNames")
    assert monitors(fitted) == {"BestCheckpoint": ("val_loss", "min"), "EarlyStopping": ("val_loss", "min")}
    assert "UnderscoreNames logs no val/loss" in capsys.readouterr().out, "said in one line"
    run("test", "--model", "tiny_tasks.UnderscoreNames", "--ckpt_path", "best")
    summary = json.loads((Path(fitted.trainer.logger.log_dir) / "summary.json").read_text())
    assert {"test_loss", "test_acc"} <= set(summary["metrics"]) and summary["best_checkpoint"]["monitor"] == "val_loss"


def test_early_stopping_follows_the_best_checkpoint_where_the_module_logs_no_loss():
    watched = ["--checkpoint.monitor=val/acc", "--checkpoint.mode=max"]
    fitted = run("fit", *SHORT, "--model", "test_monitors_follow.AccuracyOnly", *watched)
    assert monitors(fitted) == {"BestCheckpoint": ("val/acc", "max"), "EarlyStopping": ("val/acc", "max")}
    assert fitted.trainer.state.finished


class EarlyStoppingAtStart(Callback):
    """What early stopping holds as training (re)starts, after Lightning restored the checkpoint's callback states."""

    def on_train_start(self, trainer, pl_module) -> None:
        (stopping,) = [c for c in trainer.callbacks if isinstance(c, EarlyStopping)]
        self.state = {"monitor": stopping.monitor, "best_score": float(stopping.best_score)}


def test_a_resumed_run_whose_monitors_followed_the_module_restores_their_states_and_says_nothing_of_lost_callbacks(
    capsys,
):
    """The monitors followed val_loss; the resumed command's config says val/loss again. Lightning restores a
    callback's state only into one watching the same metric: early stopping restarted from nothing (its patience and
    best score lost) with a warning to add `EarlyStopping{'monitor': 'val_loss', ...}`."""
    args = [
        "--model",
        "tiny_tasks.UnderscoreNames",
        "--trainer.max_epochs=3",
        "--trainer.limit_train_batches=3",
    ]
    with pytest.raises(RuntimeError, match="crash"):
        main(lambda: cli_main(["fit", *QUIET, *args], callbacks=[CrashAt(step=7)]))  # in epoch 3, after two saves
    saved = torch.load("runs/tiny-underscorenames/version_0/checkpoints/last.ckpt", weights_only=True)
    (saved_state,) = [s for key, s in saved["callbacks"].items() if key.startswith("EarlyStopping{")]
    capsys.readouterr()
    at_start = EarlyStoppingAtStart()
    main(lambda: cli_main(["fit", *QUIET, *args, "--ckpt_path=last"], callbacks=[at_start]))
    assert at_start.state == {"monitor": "val_loss", "best_score": float(saved_state["best_score"])}
    assert "callbacks used to create the checkpoint" not in capsys.readouterr().err
