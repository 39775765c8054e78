"""On a CUDA GPU (skipped without one; benchmarks/gpu_check.py runs them): the GPU config, data on the device."""

from pathlib import Path

import pytest
import torch

from lightning_runs.data.batches import on_device

from support import DEFAULT, QUIET, ROOT, load, run, run_subprocess, steps_per_epoch

pytestmark = pytest.mark.gpu


def test_the_gpu_config_trains_with_ddp_16_mixed_and_syncbatchnorm_on_one_gpu():
    result = run_subprocess(
        "fit", "--config", DEFAULT, "--config", str(ROOT / "configs/gpu.yaml"), *QUIET,
        "--trainer.devices=1", "--trainer.max_epochs=2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    checkpoint = load(Path("runs/digits/version_0/checkpoints/last.ckpt"))
    assert checkpoint["global_step"] == 2 * steps_per_epoch()
    assert checkpoint["MixedPrecision"]["scale"] > 0  # 16-mixed's gradient scaler


def test_the_splits_are_moved_to_the_gpu_once_and_batches_are_sliced_there():
    cli = run("fit", "--trainer.accelerator=gpu", "--trainer.devices=1", "--trainer.max_epochs=1")
    for loader in (cli.trainer.train_dataloader, cli.trainer.val_dataloaders):
        assert all(tensor.is_cuda for tensor in loader.tensors)
        assert all(tensor.is_cuda for tensor in next(iter(loader)))
    assert cli.trainer.callback_metrics["val/acc"] > 0.5


def test_data_too_large_for_the_gpu_stays_on_the_host():
    tensors = (torch.zeros(10, 8, 8),)
    assert on_device(tensors, torch.device("cuda"), max_share=0.0)[0].device.type == "cpu"
    assert on_device(tensors, torch.device("cuda"))[0].is_cuda
