"""benchmarks/gpu_check.py in its --cpu mode, with tiny fits: what a GPU machine runs, minus the GPU."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gpu_check import FITS
from support import ddp_environment

TINY = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3", "--trainer.limit_val_batches=2"]


@pytest.mark.slow
def test_the_gpu_check_runs_on_the_cpu_and_prints_its_table_last():
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_check", "--cpu", "--", *TINY],
        capture_output=True, text=True, timeout=900, env=ddp_environment(),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "torch" in result.stdout and "lightning" in result.stdout  # the environment report
    header, *rows = result.stdout.strip().splitlines()[-1 - len(FITS) :]
    assert header.split()[:2] == ["fit", "status"]
    assert [row.split("  ")[0] for row in rows] == list(FITS)
    results = [json.loads(path.read_text()) for path in sorted(Path("runs/gpu-check").glob("*/throughput.json"))]
    assert [(r["precision"], r["strategy"]) for r in results] == [
        ("32-true", "SingleDeviceStrategy"),
        ("bf16-mixed", "SingleDeviceStrategy"),  # 16-mixed on a CPU
        ("bf16-mixed", "DDPStrategy"),
        ("bf16-mixed", "FSDP"),  # configs/fsdp.yaml's strategy, lightning_runs.parallel.FSDP
        ("bf16-mixed", "SingleDeviceStrategy"),  # compiled
    ]
    assert all(r["samples_per_sec"] > 0 and r["epochs"] == 2 and r["peak_gpu_mib"] is None for r in results)
    for row, r in zip(rows, results, strict=True):
        assert f"{r['samples_per_sec']:,.0f}" in row and " ok " in row
