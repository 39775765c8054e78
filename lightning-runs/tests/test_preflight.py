"""A run that would do nothing, or that the Trainer cannot run, is an error before any folder exists (issue 13,
item 4): the library's checks (lightning_runs/checks/preflight.py, the tensor sizes of limits.py), whatever the task."""

from pathlib import Path

import pytest
import torch
from tiny_runs import assert_kept, every_other_daily, refusal, run, snapshot

from tiny_tasks import TinyDataModule

SHORT = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
HIDDEN = ["--model=tiny_networks.WithNetwork", "--model.network=tiny_networks.Hidden"]
WIDTHS = "--model.network.init_args.widths "
NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the run would start")


def training_batches() -> int:
    """Batches of one epoch of the tiny task, as its DataModule cuts them: derived, never written as 192 // 32."""
    data = TinyDataModule()
    data.setup("fit")
    return len(data.train_dataloader())


CASES = [
    # A loader that drops its ragged last batch, with a batch larger than the whole train split.
    (
        "fit",
        ["--data=tiny_tasks.TinyBatches", "--data.batch_size=5000"],
        "--data tiny_tasks.TinyBatches: its train dataloader has no batch, so nothing would train",
    ),
    ("fit", ["--trainer.max_epochs=0"], "--trainer.max_epochs 0: must be at least 1"),
    ("fit", ["--trainer.max_epochs=-1"], "--trainer.max_epochs -1: must be at least 1"),
    ("fit", ["--trainer.max_steps=0"], "--trainer.max_steps 0: must be at least 1, or -1"),
    ("fit", ["--trainer.accumulate_grad_batches=0"], "--trainer.accumulate_grad_batches 0: must be at least 1"),
    # No optimizer step at all: no batch of an epoch is trained (0 batches, or a fraction that rounds to none).
    ("fit", ["--trainer.limit_train_batches=0"], "--trainer.limit_train_batches 0.0: 0 of the"),
    ("fit", ["--trainer.limit_train_batches=0.01"], f"0 of the {training_batches()} training batches an epoch"),
    ("fit", ["--seed_everything=5000000000"], "--seed_everything 5000000000: must be in 0..4294967295"),
    pytest.param("fit", ["--trainer.accelerator=gpu"], "gpu", marks=NO_GPU),
    pytest.param(
        "fit", ["--trainer.accelerator=cuda"], "--trainer.accelerator cuda: this machine has none", marks=NO_GPU
    ),
    ("fit", ["--trainer.accelerator=tpu"], "--trainer.accelerator tpu: this machine has none; give cpu or auto"),
    # Values Lightning takes, then divides by (a ZeroDivisionError at the first step) or cannot mean.
    ("fit", ["--trainer.log_every_n_steps=0"], "--trainer.log_every_n_steps 0: must be at least 1"),
    ("fit", ["--trainer.check_val_every_n_epoch=0"], "--trainer.check_val_every_n_epoch 0: must be at least 1"),
    ("fit", ["--trainer.val_check_interval=0"], "--trainer.val_check_interval 0: must be above 0"),
    (
        "fit",
        ["--trainer.val_check_interval=1000"],
        "--trainer.val_check_interval 1000: more than the 2 training batches an epoch",  # limit_train_batches 2
    ),
    ("fit", ["--trainer.gradient_clip_val=-1"], "--trainer.gradient_clip_val -1.0: must be 0 or more"),
    ("fit", ["--trainer.num_sanity_val_steps=-5"], "--trainer.num_sanity_val_steps -5: must be a number of batches"),
    (
        "fit",
        ["--trainer.min_epochs=9", "--trainer.max_epochs=2"],
        "--trainer.min_epochs 9: above --trainer.max_epochs 2",
    ),
    ("fit", ["--trainer.min_steps=9", "--trainer.max_steps=2"], "--trainer.min_steps 9: above --trainer.max_steps 2"),
    # A misspelt metric to watch: refused once the sanity check has logged the val metrics, before any training.
    (
        "fit",
        ["--early_stopping.monitor=val/los"],
        "--early_stopping.monitor val/los: no such metric is logged; the"
        " val metrics are val/acc, val/loss (did you mean val/loss?)",
    ),
    ("fit", ["--checkpoint.monitor=val/accc"], "--checkpoint.monitor val/accc: no such metric is logged"),
    # No validation batch: the metric early stopping and best.ckpt watch would never be logged.
    (
        "fit",
        ["--trainer.limit_val_batches=0"],
        "--trainer.limit_val_batches 0.0: no validation runs, so --early_stopping.monitor val/loss is never logged",
    ),
    # Devices Lightning cannot parse, and nodes no launcher set up (rank 0 would wait for the others forever).
    ("fit", ["--trainer.devices=foo"], "--trainer.devices foo: give a count of at least 1, -1 for all, auto"),
    ("fit", ["--trainer.devices=-2"], "--trainer.devices -2: give a count of at least 1"),
    ("fit", ["--trainer.num_nodes=2"], "--trainer.num_nodes 2: no launcher set up the nodes"),
    pytest.param("fit", ["--trainer.sync_batchnorm=true"], "SyncBatchNorm needs CUDA devices", marks=NO_GPU),
    # Sizes of a network: refused before the tensor is allocated (lightning_runs/limits.py), naming the option.
    (
        "fit",
        [*HIDDEN, "--model.network.init_args.widths=[1000000000, 8]"],
        WIDTHS + "[1000000000, 8]: a tensor"
        " of shape (1000000000, 4) would hold 4,000,000,000 values, more than the 1,073,741,824 accepted",
    ),
    (
        "fit",
        [*HIDDEN, "--model.network.init_args.widths=[-1, 5]"],
        WIDTHS + "[-1, 5]: a tensor of shape (-1, 4) has a negative size",
    ),
    (
        "fit",
        [*HIDDEN, "--model.network.init_args.widths=[0, 0]"],
        WIDTHS + "[0, 0]: Linear.weight of shape (3, 0) holds no value",
    ),
    (
        "fit",
        [*HIDDEN, "--model.network.init_args.widths=[100000, 100000]"],
        WIDTHS + "[100000, 100000]: a tensor of shape (100000, 100000) would hold 10,000,000,000 values",
    ),
]


@pytest.mark.parametrize("subcommand,args,expected", every_other_daily(CASES))
def test_a_command_that_would_do_nothing_or_crash_later_is_refused_first(subcommand, args, expected, capsys):
    before = snapshot()
    assert expected in refusal(capsys, lambda: run(subcommand, *SHORT, *args))
    assert not assert_kept(before, snapshot()) and not Path("runs").exists(), "no run folder left behind"
