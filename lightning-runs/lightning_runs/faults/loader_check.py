"""LoaderCheck: a command that would run no batch is refused in one line (exit 2), where Lightning warns, skips the
stage and the run "completes" having done nothing. A loader of no batches (an empty split) is refused once Lightning has
counted its batches: a fit's validation at the sanity check or the training start (before MonitorCheck would blame the
metric), an empty training loader or an evaluation's right after Lightning skipped it (nothing ran; RunsCLI removes the
run folder it made); an IterableDataset without a length, which Lightning counts as endless, that yields nothing: at the
end of the first epoch (or evaluation) it ran no batch in. Settings that leave nothing to run are refused as the command
is parsed, before any run folder (`check_limits`): counting an empty split before then would build the loaders twice.

    Trainer(callbacks=[LoaderCheck()])
"""

from lightning.pytorch.callbacks import Callback

from lightning_runs.errors import UsageError

LIMITS = {"fit": "train", "validate": "val", "test": "test", "predict": "predict"}


def check_limits(stage: str, config) -> None:
    """`config`: a command's parsed config (its `trainer` settings, `test_best`)."""
    trainer = config.trainer
    if stage not in LIMITS or trainer.get("fast_dev_run"):  # fast_dev_run sets every limit itself
        return
    keys = {f"limit_{LIMITS[stage]}_batches": stage}  # the option -> what would run nothing
    if stage == "fit":  # overfit_batches replaces limit_train_batches
        keys = {"max_epochs": stage, "max_steps": stage} | ({} if trainer.get("overfit_batches") else keys)
        keys |= {"limit_test_batches": "its --test_best"} if config.get("test_best") else {}
    key = next((key for key in keys if trainer.get(key) == 0), None)
    if key is not None:
        raise UsageError(f"--trainer.{key} {trainer[key]:g}: {keys[key]} would run no batch; give at least 1")


class LoaderCheck(Callback):
    def on_sanity_check_end(self, trainer, pl_module) -> None:
        if trainer.num_val_batches and not any(trainer.num_val_batches):  # [] : no validation asked for
            _refuse(trainer, pl_module, "fit", "val", ", or fit without validation (Trainer(limit_val_batches=0))")

    on_train_start = on_sanity_check_end  # where no sanity check ran (a resume): validation is counted by now

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        # An IterableDataset without a length is counted as endless: one that yields nothing shows only here.
        if not trainer.fit_loop.epoch_loop.batch_progress.current.ready:
            _refuse(trainer, pl_module, "fit", "train")

    def teardown(self, trainer, pl_module, stage: str) -> None:
        stage = str(getattr(stage, "value", stage))  # a TrainerFn
        # An evaluation's batches as it ran them, not as counted: a loader counted as endless may have given none.
        loop = None if stage == "fit" else getattr(trainer, f"{stage}_loop")
        if not (loop.batch_progress.current.ready if loop else trainer.num_training_batches):
            _refuse(trainer, pl_module, stage, LIMITS[stage])


def _refuse(trainer, pl_module, stage: str, split: str, other: str = "") -> None:
    owner = type(trainer.datamodule or pl_module).__name__
    raise UsageError(
        f"{stage}: {owner}.{split}_dataloader gives no batch (an empty split or iterable, or fewer samples than a batch"
        f" with drop_last), so nothing would run; give it samples{other}"
    )
