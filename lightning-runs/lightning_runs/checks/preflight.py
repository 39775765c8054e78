"""A command that would do nothing, or crash once its run folder has files, is refused first, in one line.

Lightning accepts `--trainer.max_epochs 0` (trains nothing, exits 0), `-1` (trains forever: the schedule's length is
infinite) and `accumulate_grad_batches 0` (a division by zero in the schedule); a training loader without a batch
trains nothing either, and data of another shape than a checkpoint's model crashes inside the Trainer.
"""

import re
from pathlib import Path

import torch
from lightning.pytorch.accelerators import AcceleratorRegistry

from lightning_runs.checkpoints.loading import load_plain
from lightning_runs.checkpoints.monitored import watched
from lightning_runs.contract.parts import example_input
from lightning_runs.errors import UsageError
from lightning_runs.parallel.sharding import FSDP
from lightning_runs.speed.compiling import Compile

SEED_RANGE = (0, 2**32 - 1)  # what NumPy's seeding, and so Lightning's seed_everything, accepts
DEVICES = re.compile(r"-1|\d+|(\d+,)+\d*")  # a count, -1, or indices: "0,1", "1," (Lightning's device parsing)
STAGES = {"fit": "fit", "validate": "validate", "test": "test", "predict": "predict"}  # subcommand -> setup(stage)


def check_options(config) -> None:
    """What the parser cannot see alone; at parse time, before a seed is set or a folder claimed."""
    trainer = config.trainer
    if trainer.max_epochs is not None and trainer.max_epochs < 1:
        raise UsageError(
            f"--trainer.max_epochs {trainer.max_epochs}: must be at least 1 (the LR schedule spans the run's epochs)"
        )
    if trainer.max_steps is not None and trainer.max_steps != -1 and trainer.max_steps < 1:
        raise UsageError(f"--trainer.max_steps {trainer.max_steps}: must be at least 1, or -1 for no limit")
    if trainer.accumulate_grad_batches is not None and trainer.accumulate_grad_batches < 1:
        raise UsageError(f"--trainer.accumulate_grad_batches {trainer.accumulate_grad_batches}: must be at least 1")
    check_devices(trainer.devices)
    check_trainer_values(trainer)
    if trainer.sync_batchnorm and (trainer.accelerator == "cpu" or not torch.cuda.is_available()):
        raise UsageError(  # on one process it syncs nothing; under DDP on CPUs, a traceback at the first batch
            "--trainer.sync_batchnorm true: SyncBatchNorm needs CUDA devices (DDP on CPUs fails at the first"
            " batch); give false on this machine"
        )
    for group in ("checkpoint", "last_checkpoint"):  # Lightning writes into any folder given, over what is there
        dirpath = (config.get(group) or {}).get("dirpath")
        if dirpath is not None:
            raise UsageError(
                f"--{group}.dirpath {dirpath}: a run's checkpoints go in its own folder (runs/<name>/version_N/"
                "checkpoints), so no run writes over another's; --trainer.logger.init_args.save_dir moves runs/"
            )
    seed = config.get("seed_everything")
    if not isinstance(seed, bool) and seed is not None and not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        raise UsageError(
            f"--seed_everything {seed}: must be in {SEED_RANGE[0]}..{SEED_RANGE[1]}, or true for a random one"
        )


# Trainer settings Lightning takes, then divides by or runs backwards with (a ZeroDivisionError at the first step, a
# negative clip): each with what it must be.
TRAINER_VALUES = {
    "log_every_n_steps": (lambda v: v >= 1, "must be at least 1 (logs every N-th step)"),
    "check_val_every_n_epoch": (lambda v: v >= 1, "must be at least 1 (validates every N-th epoch), or null"),
    "val_check_interval": (lambda v: v > 0, "must be above 0: a fraction of an epoch (0.5) or a number of batches"),
    "gradient_clip_val": (lambda v: v >= 0, "must be 0 or more (0 or null: no clipping)"),
    "num_sanity_val_steps": (lambda v: v >= -1, "must be a number of batches, 0 for none or -1 for all"),
}


def check_trainer_values(trainer) -> None:
    for key, (fine, must) in TRAINER_VALUES.items():
        value = trainer.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and not fine(value):
            raise UsageError(f"--trainer.{key} {value}: {must}")
    for least, most in (("min_epochs", "max_epochs"), ("min_steps", "max_steps")):
        low, high = trainer.get(least), trainer.get(most)
        if low is not None and high not in (None, -1) and low > high:
            raise UsageError(
                f"--trainer.{least} {low}: above --trainer.{most} {high}, which ends the run first; lower it or"
                f" raise {most}"
            )
    accelerator = trainer.get("accelerator")
    known = isinstance(accelerator, str) and accelerator in AcceleratorRegistry
    if known and not AcceleratorRegistry[accelerator]["accelerator"].is_available():
        raise UsageError(f"--trainer.accelerator {accelerator}: this machine has none; give cpu or auto")


def device_count(devices) -> int | None:
    """How many devices --trainer.devices asks for where the value says it: 2, "2", [0, 1], "0,1"; None for "auto"
    and -1 (as many as the accelerator has), and for a value check_devices refuses."""
    if isinstance(devices, list | tuple):
        return len(devices)
    if isinstance(devices, str):
        if "," in devices:
            return len([d for d in devices.split(",") if d.strip()])
        devices = int(devices) if devices.strip().lstrip("-").isdigit() else None
    return devices if isinstance(devices, int) and not isinstance(devices, bool) and devices > 0 else None


def check_devices(devices) -> None:
    """What Lightning's parsing of `devices` accepts: a count of at least 1, -1 (all), "auto", or device indices
    ("0,1", [0, 1]). Anything else (`foo`, -2) was a TypeError traceback from inside the accelerator."""
    text = str(devices).strip()
    if isinstance(devices, list | tuple):
        valid = all(isinstance(d, int) and d >= 0 for d in devices) and len(devices) > 0
    else:
        valid = text == "auto" or (DEVICES.fullmatch(text) is not None and text != "0")
    if not valid:
        raise UsageError(
            f"--trainer.devices {devices}: give a count of at least 1, -1 for all, auto, or device indices (0,1)"
        )


def check_data(subcommand: str, trainer, datamodule, model) -> None:
    """The data set up before the run writes anything, so that the DataModule's own refusals (an empty split, a file
    of the wrong shape) come first, in one line; a training loader with no batch, or samples to predict of another
    shape than the model takes, are refused here. setup() runs again inside the Trainer: a DataModule's setup must
    not mind (the template's keeps what it loaded)."""
    if datamodule is None:
        return
    datamodule.trainer = trainer  # as Lightning attaches it: setup() may read the world size
    datamodule.setup(STAGES[subcommand])
    if subcommand == "fit":
        loader = datamodule.train_dataloader()
        if hasattr(loader, "__len__") and len(loader) == 0:
            raise UsageError(f"{_named(datamodule)}: its train dataloader has no batch, so nothing would train")
        limit = trainer.limit_train_batches  # an int is a count of batches, a float a fraction (Lightning's reading)
        batches = None  # the batches an epoch trains, as Lightning counts them; None for a loader of no length
        if hasattr(loader, "__len__"):
            batches = min(limit, len(loader)) if isinstance(limit, int) else int(len(loader) * limit)
        if batches == 0:
            raise UsageError(
                f"--trainer.limit_train_batches {limit}: 0 of the {len(loader)} training batches an epoch, so nothing"
                " would train; raise it"
            )
        interval = trainer.val_check_interval
        if batches is not None and isinstance(interval, int) and trainer.check_val_every_n_epoch and interval > batches:
            # Lightning's own ValueError, raised once the fit has started (a traceback, a run folder left).
            raise UsageError(
                f"--trainer.val_check_interval {interval}: more than the {batches} training batches an epoch; give"
                " at most that, a fraction of an epoch (0.5), or --trainer.check_val_every_n_epoch null"
            )
        check_validation_runs(trainer, datamodule)
    if subcommand == "predict" and (example := example_input(model)) is not None:
        batch = next(iter(datamodule.predict_dataloader()), None)
        samples = batch[0] if isinstance(batch, tuple | list) else batch
        if isinstance(samples, torch.Tensor) and samples.shape[1:] != example.shape[1:]:
            raise UsageError(
                f"{_named(datamodule)}: samples to predict of shape {tuple(samples.shape[1:])}, but the model takes"
                f" {tuple(example.shape[1:])}"
            )


def check_checkpoint_fits(model, ckpt_path: str | None, evaluating: bool = True) -> None:
    """The checkpoint's weights have the shapes of the model built for this data: evaluating on data of other classes
    or sample shape is refused in one line, not a traceback from load_state_dict; and, `evaluating` (not a resume,
    which faults/ answers), they are finite."""
    if ckpt_path is None:
        return
    saved = load_plain(Path(ckpt_path)).get("state_dict", {})  # read and checked at parse time: cached
    built = model.state_dict()
    for name, tensor in built.items():
        if name in saved and tuple(saved[name].shape) != tuple(tensor.shape):
            raise UsageError(
                f"--ckpt_path {ckpt_path}: its model does not fit this data ({name} is {tuple(saved[name].shape)}"
                f" there, {tuple(tensor.shape)} here); evaluate it on data of its own classes and sample shape"
            )
    missing = [name for name in built if name not in saved]
    if missing:
        raise UsageError(f"--ckpt_path {ckpt_path}: not a checkpoint of this model (no {missing[0]})")
    extra = [name for name in saved if name not in built]
    if extra and getattr(model, "strict_loading", True):  # Lightning's load_state_dict(strict=True) traceback
        raise UsageError(
            f"--ckpt_path {ckpt_path}: not a checkpoint of this model (it holds {extra[0]}, which this model has not)"
        )
    # NaN or infinite weights evaluate to a NaN score (test), or predict NaN for every sample: nothing to learn from.
    broken = next((name for name, t in saved.items() if _floating(t) and not t.isfinite().all()), None)
    if broken is not None and evaluating:
        raise UsageError(
            f"--ckpt_path {ckpt_path}: its weights hold NaN or infinite values ({broken}), so every score and"
            " prediction would be NaN; evaluate a checkpoint saved before the run diverged"
        )


def check_validation_runs(trainer, datamodule) -> None:
    """A fit whose validation batches are limited to none never logs the `val/...` metrics that early stopping or
    the best checkpoint watch: Lightning's traceback came after a whole epoch."""
    limit = trainer.limit_val_batches
    if limit is None or (limit if isinstance(limit, int) else float(limit)) > 0:
        return
    for option, metric in watched(trainer.callbacks):
        if metric.startswith("val"):  # metrics are named stage/name (contract/parts.py)
            raise UsageError(
                f"--trainer.limit_val_batches {limit}: no validation runs, so {option} {metric} is never logged;"
                " keep validation, or watch a training metric"
            )


def _floating(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _named(datamodule) -> str:
    return f"--data {type(datamodule).__module__}.{type(datamodule).__qualname__}"


def check_callbacks(trainer, model) -> None:
    """What a callback or the strategy can tell before the run writes anything: --compile.enabled on a module with
    nothing to compile; FSDP asked for a module with parameters outside its networks."""
    for callback in trainer.callbacks:
        if isinstance(callback, Compile):
            callback.networks_of(model)
    if isinstance(trainer.strategy, FSDP):
        trainer.strategy.check(model)
