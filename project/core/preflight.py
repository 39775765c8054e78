"""A command that would do nothing, or crash once its run folder has files, is refused first, in one line.

Lightning accepts `--trainer.max_epochs 0` (trains nothing, exits 0), `-1` (trains forever: the schedule's length is
infinite) and `accumulate_grad_batches 0` (a division by zero in the schedule); a batch larger than the train split
trains nothing either, and an empty validation split crashes after the first epoch (best.ckpt and early stopping
watch it).
"""

import math

from project.core.errors import UsageError

SEED_RANGE = (0, 2**32 - 1)  # what NumPy's seeding, and so Lightning's seed_everything, accepts


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
    seed = config.get("seed_everything")
    if not isinstance(seed, bool) and seed is not None and not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        raise UsageError(
            f"--seed_everything {seed}: must be in {SEED_RANGE[0]}..{SEED_RANGE[1]}, or true for a random one"
        )


def check_splits(subcommand: str, trainer, datamodule) -> None:
    """Each split the command reads holds data: a full training batch on every process, a validation sample, a test
    sample. Loads the data (setup() keeps it for the command, which then does not load it again)."""
    if not hasattr(datamodule, "splits"):
        return  # not an ArrayDataModule: its own checks apply
    datamodule.setup({"validate": "validate", "test": "test", "predict": "predict"}.get(subcommand, "fit"))
    if datamodule.splits is None:
        return  # predicting a file of images, read and checked already
    sizes = {name: len(labels) for name, (_, labels) in datamodule.splits.items()}
    total, args = sum(sizes.values()), datamodule.hparams
    needed = {"fit": ("train", "val"), "validate": ("val",), "test": ("test",), "predict": ("test",)}[subcommand]
    for split in needed:
        if split != "train" and sizes[split] == 0:
            fraction = {"val": "val_fraction", "test": "test_fraction"}[split]
            raise UsageError(
                f"--data.{fraction} {args[fraction]}: the {split} split of {total} samples is empty; raise it"
                + (" (best.ckpt and early stopping are chosen on it)" if split == "val" else "")
            )
    per_process = math.ceil(sizes["train"] / trainer.world_size)
    if "train" in needed and per_process < args.batch_size:
        where = f" ({per_process} per process)" if trainer.world_size > 1 else ""
        raise UsageError(
            f"--data.batch_size {args.batch_size}: the train split has {sizes['train']} samples{where}, not one full"
            " batch (a partial last batch is dropped), so nothing would train; lower it"
        )
