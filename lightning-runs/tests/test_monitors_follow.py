"""The run's default monitors follow what a module logs: `val_loss` as Lightning's docs name it as well as `val/loss`,
and early stopping the best checkpoint's metric where the module logs no loss; its test scores reach summary.json
under either naming. (A monitor the user names and the module does not log is refused: test_library.py.)"""

import json
from pathlib import Path

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
