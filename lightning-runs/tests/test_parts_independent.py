"""The parts in a plain Trainer: in any order (each pair listed the other way round from the CLI's, cli/parts.py, does
what it does in the CLI's order; Lightning keeps a list's order, but for its ModelCheckpoints, which it moves to the
end), a part without the part its promise needs says so in one line, and their lines name settings as Python gives
them, where the CLI's name its options."""

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.demos.boring_classes import BoringModel
from test_exact_restarts import DropoutClassifier
from test_zero_work import Nothing
from tiny_runs import refusal, run
from torch.utils.data import DataLoader, TensorDataset

from lightning_runs.checkpoints import BestCheckpoint, LastCheckpoint, RandomState
from lightning_runs.errors import UsageError, cli_terms
from lightning_runs.faults import CheckpointOnSignal, LoaderCheck, MonitorCheck
from tiny_tasks import TinyBatches, TinyClassifier

QUIET = {"accelerator": "cpu", "logger": False, "enable_progress_bar": False, "enable_model_summary": False}


def test_monitor_check_listed_after_early_stopping_still_says_its_line_first(tmp_path):
    # Validated inside the epoch, early stopping reads its metric at validation's end (not at the epoch's end, where
    # Lightning calls the monitoring callbacks last): the hook MonitorCheck shares with it.
    trainer = L.Trainer(
        max_epochs=1, limit_train_batches=4, val_check_interval=2, num_sanity_val_steps=0,
        callbacks=[EarlyStopping(monitor="val_loss"), MonitorCheck()], default_root_dir=tmp_path, **QUIET,
    )  # fmt: skip
    with pytest.raises(UsageError) as refused:
        trainer.fit(TinyClassifier(), datamodule=TinyBatches())
    assert str(refused.value) == (
        "EarlyStopping monitors val_loss, which TinyClassifier does not log (it logs: train/loss, val/acc, val/loss);"
        " monitor one of those (EarlyStopping(monitor=...)), or none (leave EarlyStopping out)"
    )


def test_the_cli_says_the_same_refusal_in_its_options(capsys):
    line = refusal(capsys, lambda: run("fit", "--trainer.limit_train_batches=2", "--early_stopping.monitor=val_loss"))
    assert line == (
        "error: EarlyStopping monitors val_loss, which TinyClassifier does not log (it logs: val/acc, val/loss);"
        " monitor one of those (--early_stopping.monitor), or none (--early_stopping null)"
    )


def test_monitor_check_listed_before_loader_check_leaves_an_empty_validation_split_to_it(tmp_path):
    empty = DataLoader(TensorDataset(torch.zeros(0, 32)), batch_size=2)
    trainer = L.Trainer(
        max_epochs=1, callbacks=[MonitorCheck(), LoaderCheck(), EarlyStopping(monitor="val_loss")],
        default_root_dir=tmp_path, **QUIET,
    )  # fmt: skip
    with pytest.raises(UsageError, match=r"^fit: BoringModel\.val_dataloader gives no batch") as refused:
        trainer.fit(BoringModel(), val_dataloaders=empty)
    assert str(refused.value).endswith("give it samples, or fit without validation (Trainer(limit_val_batches=0))")


def test_monitor_check_listed_before_loader_check_leaves_a_stream_that_yields_nothing_to_it(tmp_path):
    trainer = L.Trainer(
        max_epochs=1, limit_val_batches=0, callbacks=[MonitorCheck(), LoaderCheck(), EarlyStopping(monitor="loss")],
        default_root_dir=tmp_path, **QUIET,
    )  # fmt: skip
    with pytest.raises(UsageError, match=r"^fit: BoringModel\.train_dataloader gives no batch"):
        trainer.fit(BoringModel(), train_dataloaders=DataLoader(Nothing(), batch_size=2))


def test_last_checkpoint_listed_before_best_checkpoint_holds_best_as_it_is_after_the_epoch(tmp_path):
    trainer = L.Trainer(
        max_epochs=3, limit_train_batches=4,
        callbacks=[LastCheckpoint(dirpath=tmp_path, filename="last"),
                   BestCheckpoint(dirpath=tmp_path, monitor="val/loss", filename="best")],
        **QUIET,
    )  # fmt: skip
    trainer.fit(TinyClassifier(), datamodule=TinyBatches())
    best = next(c for c in trainer.checkpoint_callbacks if isinstance(c, BestCheckpoint))
    saved = torch.load(tmp_path / "last.ckpt", weights_only=True)["callbacks"][best.state_key]
    assert saved["best_model_score"] == best.best_model_score, "a resume from last.ckpt would carry a stale best"
    assert saved["best_model_path"] == best.best_model_path


def fit_dropout(folder, epochs: int, parts: list, ckpt_path=None) -> L.Trainer:
    L.seed_everything(0, verbose=False)
    trainer = L.Trainer(max_epochs=epochs, limit_train_batches=4, callbacks=parts, default_root_dir=folder, **QUIET)
    trainer.fit(DropoutClassifier(), datamodule=TinyBatches(), ckpt_path=ckpt_path)
    return trainer


def test_last_checkpoint_without_random_state_says_that_its_resume_draws_otherwise(tmp_path):
    whole = fit_dropout(tmp_path / "whole", 2, [LastCheckpoint(filename="last")])
    with pytest.warns(UserWarning, match=r"^LastCheckpoint without RandomState\(\) in the callbacks: a fit resumed"):
        fit_dropout(tmp_path / "resumed", 1, [LastCheckpoint(filename="last")])
    last = tmp_path / "resumed/checkpoints/last.ckpt"
    resumed = fit_dropout(tmp_path / "resumed", 2, [LastCheckpoint(filename="last")], ckpt_path=last)
    apart = whole.lightning_module.layer.weight - resumed.lightning_module.layer.weight
    assert apart.abs().max() > 1e-4, "the dropout masks after the resume were drawn from another state"


def test_checkpoint_on_signal_without_last_checkpoint_says_where_its_checkpoint_may_not_be_found(tmp_path, recwarn):
    fit_dropout(tmp_path, 1, [CheckpointOnSignal(), RandomState()])
    (line,) = [str(w.message) for w in recwarn if " in the callbacks:" in str(w.message)]
    assert line.startswith('CheckpointOnSignal without LastCheckpoint(filename="last") in the callbacks: trainer.fit(')


def test_the_parts_together_say_nothing_of_each_other(tmp_path, recwarn):
    fit_dropout(tmp_path, 1, [CheckpointOnSignal(), LastCheckpoint(filename="last"), RandomState()])
    assert not [w for w in recwarn if " in the callbacks:" in str(w.message)]


def test_the_cli_rewrites_the_parts_python_terms_only():
    said = 'lower the learning rate or use Trainer(precision="bf16-mixed") or 32; set Trainer(gradient_clip_val=...)'
    options = "lower the learning rate or use --trainer.precision bf16-mixed or 32; set --trainer.gradient_clip_val"
    assert cli_terms(said) == options
    said = 'InitFrom(path="runs/a b.ckpt"): ...; fold_indices(..., folds=3) (fold 0); trainer.fit(..., ckpt_path=None)'
    assert cli_terms(said) == "--init_from runs/a b.ckpt: ...; --data.folds 3 (fold 0); drop --ckpt_path"
    own = "error: torch.compile(fullgraph=True) met a graph break; compile without fullgraph"
    assert cli_terms(own) == own, "a line of the CLI's own, whose Python is no setting, is left as it is"
