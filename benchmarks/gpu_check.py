"""Check a GPU machine in one call (under 8 minutes on one GPU); a table of the fits is printed last.

    python -m benchmarks.gpu_check            # on a machine with a CUDA GPU
    python -m benchmarks.gpu_check --cpu      # anywhere: the fits on the CPU, the GPU-only parts skipped
    python -m benchmarks.gpu_check --cpu -- --trainer.max_epochs 2   # options after -- go to every fit

1. the environment: Python, torch, Lightning, the GPU, CUDA, cuDNN, NCCL, bf16 support
2. the suite's GPU tests (pytest -m gpu)
3. the default fit (configs/digits.yaml) on one GPU in 32-bit and in 16-mixed: train samples/s, peak GPU memory
4. the GPU config (configs/gpu.yaml: strategy=ddp, 16-mixed, SyncBatchNorm) on one GPU
The fits are the real CLI in subprocesses; their runs land in runs/gpu-check/version_N with a throughput.json.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import DEFAULT, ENV, ROOT, project

BUDGET_S = 450  # every step shares it, so one call stays under 8 minutes even when a step hangs
FITS = {  # name: options on top of configs/digits.yaml
    "default, 32-true": ["--trainer.precision=32-true"],
    "default, 16-mixed": ["--trainer.precision=16-mixed"],
    "gpu.yaml (ddp)": ["--config", str(ROOT / "configs/gpu.yaml")],
    "fsdp.yaml (FSDP2, bf16-mixed)": ["--config", str(ROOT / "configs/fsdp.yaml")],  # its CUDA path: NCCL, bf16
    # torch.compile's GPU path (Triton kernels, CUDA graphs in other modes): the CPU tests run only its C++ one.
    "default, 16-mixed, compiled": ["--trainer.precision=16-mixed", "--compile.enabled=true"],
}


def report_environment(cpu: bool) -> None:
    import lightning
    import torch

    rows = {
        "python": f"{platform.python_version()} on {platform.platform()}",
        "torch": f"{torch.__version__} (built for CUDA {torch.version.cuda})",
        "lightning": lightning.__version__,
        "CPU cores": str(os.cpu_count()),
    }
    if torch.cuda.is_available():
        gpu = torch.cuda.get_device_properties(0)
        rows["GPU"] = f"{gpu.name}, {gpu.total_memory / 2**30:.0f} GiB, compute capability {gpu.major}.{gpu.minor}"
        rows["GPUs visible"] = str(torch.cuda.device_count())
        rows["cuDNN / NCCL"] = f"{torch.backends.cudnn.version()} / {'.'.join(map(str, torch.cuda.nccl.version()))}"
        rows["bf16-mixed"] = "supported" if torch.cuda.is_bf16_supported() else "not supported: use 16-mixed"
        if shutil.which("nvidia-smi"):
            query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
            rows["driver"] = subprocess.run(query, capture_output=True, text=True, timeout=30).stdout.strip()
    else:
        rows["CUDA"] = "not available" + (" (--cpu)" if cpu else "")
    print("== Environment")
    for name, value in rows.items():
        print(f"  {name:14} {value}")
    if not (cpu or torch.cuda.is_available()):
        sys.exit("No CUDA GPU here: run with --cpu to check everything else.")


def run_gpu_tests(deadline: float) -> str:
    print("== GPU tests: pytest -m gpu", flush=True)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", str(ROOT / "tests"),
             str(ROOT / "lightning-runs/tests")],  # the template's and the library's (16-mixed's scaler)
            cwd=ROOT, capture_output=True, text=True, timeout=max(1, deadline - time.monotonic()),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timed out"
    print(result.stdout[-3000:] + result.stderr[-2000:])
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "no output"
    return summary.strip("= ") if result.returncode == 0 else f"FAILED: {summary.strip('= ')}"


def fit(name: str, options: list[str], cpu: bool, extra: list[str], deadline: float) -> dict:
    device = ["--trainer.accelerator=cpu", "--trainer.sync_batchnorm=false"] if cpu else ["--trainer.accelerator=gpu"]
    command = [
        *project("fit", "--config", str(DEFAULT)), *options, *device,
        "--trainer.devices=1", "--trainer.logger.init_args.name=gpu-check", "--trainer.enable_progress_bar=false",
        "--trainer.callbacks+=benchmarks.throughput.Throughput", *extra,
    ]  # fmt: skip
    runs = Path("runs/gpu-check")
    before = set(runs.glob("version_*"))
    print(f"== Fit {name}: {' '.join(command[1:])}", flush=True)
    if deadline - time.monotonic() < 1:
        return {"status": "no time left"}
    try:
        result = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=deadline - time.monotonic())
    except subprocess.TimeoutExpired:
        return {"status": "timed out"}
    if result.returncode != 0:
        print(result.stdout[-2000:] + result.stderr[-4000:])
        return {"status": f"exit {result.returncode}"}
    (run_dir,) = set(runs.glob("version_*")) - before
    return {"status": "ok", "run": str(run_dir), **json.loads((run_dir / "throughput.json").read_text())}


def table(tests: str, fits: dict[str, dict]) -> str:
    def number(value, form: str) -> str:
        return "-" if value is None else format(value, form)

    lines = [f"GPU tests: {tests}", ""]
    header = ("fit", "status", "precision", "strategy", "epochs", "train samples/s", "peak GPU MiB", "val/acc")
    rows = [header] + [
        (
            name, r["status"], r.get("precision", "-"), r.get("strategy", "-"), number(r.get("epochs"), "d"),
            number(r.get("samples_per_sec"), ",.0f"), number(r.get("peak_gpu_mib"), ",.0f"),
            number(r.get("val_acc"), ".4f"),
        )
        for name, r in fits.items()
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu", action="store_true", help="no GPU: fit on the CPU, skip the GPU tests")
    parser.add_argument("extra", nargs="*", help="options for every fit, after --")
    args = parser.parse_args()
    deadline = time.monotonic() + BUDGET_S
    report_environment(args.cpu)
    tests = "skipped (--cpu)" if args.cpu else run_gpu_tests(deadline)
    fits = {name: fit(name, options, args.cpu, args.extra, deadline) for name, options in FITS.items()}
    print("\n== Summary\n" + table(tests, fits))
    failed = tests.startswith(("FAILED", "timed out")) or any(r["status"] != "ok" for r in fits.values())
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
