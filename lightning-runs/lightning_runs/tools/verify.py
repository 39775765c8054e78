"""`python -m <package> verify <fit options>`: whether your module resumes bit for bit and its checkpoint evaluates.

It fits your recipe (the `--config`, `--model`, `--data` ... options `fit` takes) for 2 epochs of at most 4 batches with
a checkpoint every step, the reference. Then for each stop point the same fit runs in a process of its own, is stopped
there (lightning_runs.testing.SignalAt: SIGTERM, or kill -9) and resumed with `--ckpt_path last` in another, and every
value of its final checkpoint (weights, optimizer, schedulers, loops, callbacks, RNG and data states) is compared with
the reference's. Then test, validate, predict and export of the reference's checkpoint each work or are refused in one
line. All runs go to a temporary folder: your runs/ is not touched. A table says each; exit 1 on any difference.
"""

import concurrent.futures
import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
import unittest.mock
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

import lightning_runs
from lightning_runs.checkpoints.checkpoint_io import read_checkpoint
from lightning_runs.console import program
from lightning_runs.errors import Failed, UsageError, first_line
from lightning_runs.tools.fits import Fits

BATCHES, EPOCHS, WORKERS = 4, 2, 2
# Each stop: (signal, the fit's batch it comes at as a function of the batches an epoch, accumulate_grad_batches).
POINTS = {
    "SIGTERM mid-epoch": (15, lambda n: n + n // 2, 1),
    "kill -9 mid-epoch (step checkpoints)": (9, lambda n: min(n + n // 2 + 1, 2 * n - 1), 1),
    "SIGTERM inside an accumulation window": (15, lambda n: n + 1, 2),
    "kill -9 at an epoch's end": (9, lambda n: n, 1),
}
EVALUATIONS = ("test", "validate", "predict", "export")
# Where a difference first shows, checked in this order (the earliest is the likeliest cause of the later ones).
CAUSES = (
    (("loops/fit_loop/state_dict/combined_loader",), "the training loader's saved state differs (its position or its"
     " seed): a loader without `generator=` draws its seed from the global RNG, after the restore on a resume"),
    (("epoch", "global_step", "loops"), "the resumed run counted other batches or steps: some replayed or skipped"),
    (("callbacks/RandomState",), "random draws after the resume differ: a loader without `generator=` drew its seed"
     " from the global RNG after the restore, or the module draws from an RNG no checkpoint holds"),
    (("state_dict",), "the weights differ while counters and RNG agree: a state no checkpoint holds (the module's own"
     " generator or attribute, layers unfrozen at an epoch's start, the data's order)"),
    (("optimizer_states",), "the optimizer's state differs: the parameters it holds (frozen, unfrozen) or its steps"),
    (("lr_schedulers",), "the schedulers stepped otherwise: an interval or a step the resume repeated or skipped"),
    (("callbacks",), "a callback's state differs: set at an epoch's start or kept outside its state_dict"),
    ((), "the DataModule's or the module's saved state differs"),
)  # fmt: skip


def verify(cli_main: Callable, args: list[str]) -> list[tuple[str, str]]:
    threads = max(1, (os.cpu_count() or 1) // WORKERS)  # one count for every run: the same arithmetic in each
    torch.set_num_threads(threads)
    fits = Fits(cli_main, threads=threads)
    limits = [f"--trainer.limit_train_batches={BATCHES}", f"--trainer.max_epochs={EPOCHS}", "--trainer.max_steps=-1"]
    limits += ["--trainer.limit_val_batches=2", "--last_checkpoint.every_n_train_steps=1", "--quiet"]
    rows: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="verify-") as tmp, concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:

        def fit(place: str, *more: str) -> list[str]:
            return ["fit", *args, *limits, *more, f"--trainer.logger.init_args.save_dir={tmp}/{place}"]

        def reference(accumulate: int) -> Path:  # in this process: no second start-up to pay
            warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
            command = fit(f"reference{accumulate}", f"--trainer.accumulate_grad_batches={accumulate}")
            with contextlib.redirect_stdout(io.StringIO()), argv(command):  # its summary names a folder soon gone
                ranks = getattr(getattr(cli_main(command), "trainer", None), "world_size", 1)
            if ranks > 1:  # the launcher's process group does not start twice in one process: a traceback
                raise UsageError(f"verify compares fits of one process, and this recipe ran on {ranks} (its devices,"
                                 " nodes or strategy): give --trainer.devices 1 --trainer.num_nodes 1")  # fmt: skip
            return last_checkpoint(Path(tmp, f"reference{accumulate}"))

        def stop(name: str, signum: int, batch: int, accumulate: int, whole: Path) -> None:
            place, more = name.replace(" ", "_"), [f"--trainer.accumulate_grad_batches={accumulate}"]
            signal = ["--trainer.callbacks+=lightning_runs.testing.SignalAt", f"--trainer.callbacks.signum={signum}"]
            stopped = _run(fits, fit(place, *more, *signal, f"--trainer.callbacks.batch={batch}"))
            if stopped.returncode not in (128 + signum, -signum):
                rows[name] = f"the stop at batch {batch} never came (exit {stopped.returncode}): {_last(stopped)}"
                return
            resumed = _run(fits, fit(place, *more, "--ckpt_path=last"))
            if resumed.returncode != 0:
                rows[name] = f"the resume failed (exit {resumed.returncode}): {_last(resumed)}"
                return
            ends = (whole, last_checkpoint(Path(tmp, place)))
            rows[name] = _verdict(batch, *(dict(_leaves(read_checkpoint(p), str(p.parents[3]))) for p in ends))

        def evaluate(stage: str, checkpoint: Path) -> str:  # here too, one after another: they share the run
            command = [stage, f"--ckpt_path={checkpoint}", *(["--quiet"] if stage != "export" else [])]
            said = io.StringIO()
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(said), argv(command):
                    lightning_runs.main(cli_main, cli_main.__module__.partition(".")[0], command)
            except SystemExit as exit:
                lines = said.getvalue().strip().splitlines()
                errors = [line for line in lines if line.startswith("error:")]  # beside the module's own warnings
                if exit.code == 2 and len(errors) == 1 and "Traceback" not in said.getvalue():
                    return f"refused in one line: {errors[0]}"
                return f"fails (exit {exit.code}): {lines[-1] if lines else ''}"
            except Exception as error:  # a bug in the module or the library: its traceback would show
                return f"fails: {type(error).__name__}: {first_line(error)}"
            return "works"

        whole = reference(1)
        batches = read_checkpoint(whole)["loops"]["fit_loop"]["epoch_loop.batch_progress"]["current"]["completed"]
        manual = not read_checkpoint(whole)["loops"]["fit_loop"]["epoch_loop.automatic_optimization.optim_progress"][
            "optimizer"]["step"]["total"]["completed"]  # fmt: skip
        jobs = []  # the stops that share the first reference start first: the pool works while the second is fitted
        for name, (signum, at, accumulate) in sorted(POINTS.items(), key=lambda point: point[1][2]):
            if accumulate > 1 and manual:
                rows[name] = "not applicable: the module optimizes manually (Lightning accumulates for automatic only)"
            else:
                whole_run = whole if accumulate == 1 else reference(accumulate)
                jobs.append(pool.submit(stop, name, signum, at(batches), accumulate, whole_run))
        rows |= {stage: evaluate(stage, whole) for stage in EVALUATIONS}
        for job in jobs:
            job.result()
    table = [(name, rows[name]) for name in [*POINTS, *EVALUATIONS]]
    width = max(len(name) for name, _ in table)
    print(f"\n{'stop point or command':<{width}}  result")
    print("\n".join(f"{name:<{width}}  {row}" for name, row in table))
    failed = [name for name, row in table if not row.startswith(("exact", "works", "refused", "not applicable"))]
    if failed:
        raise Failed(f"{program()} verify: {len(failed)} of {len(table)} not as promised ({', '.join(failed)})")
    return table


def argv(command: list[str]):
    """sys.argv as the command's: Lightning's DDP launcher starts the other ranks with it (not `verify` again)."""
    return unittest.mock.patch.object(sys, "argv", [sys.argv[0], *command])


def last_checkpoint(root: Path) -> Path:
    return next(root.glob("*/version_*/checkpoints/last.ckpt"))


def _run(fits: Fits, command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*fits.python, *command], env=fits.env, capture_output=True, text=True)


def _last(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(nothing on stderr)"


def _leaves(value, root: str, key: str = ""):
    """(path, value) of every tensor and value (`state_dict/net.0.weight`, `callbacks/RandomState/torch`), the runs
    root left out of every name and string: runs in two folders name their own files."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, root, f"{key}/{k}" if key else str(k))
    elif isinstance(value, list | tuple):
        yield key.replace(root, "<runs>"), len(value)
        for i, v in enumerate(value):
            yield from _leaves(v, root, f"{key}/{i}")
    else:
        yield key.replace(root, "<runs>"), value.replace(root, "<runs>") if isinstance(value, str) else value


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    return a == b or (a != a and b != b)  # NaN as NaN


def _verdict(batch: int, a: dict, b: dict) -> str:
    differ = sorted(k for k in a.keys() | b.keys() if k not in a or k not in b or not _same(a[k], b[k]))
    if not differ:
        tensors = sum(isinstance(v, torch.Tensor) for v in a.values())
        return f"exact at batch {batch} ({tensors} tensors, {len(a) - tensors} other values)"
    prefix, cause = next((p, c) for p, c in CAUSES if not p or any(k.startswith(p) for k in differ))
    first = re.sub(r"\{.*?\}", "", next(k for k in differ if not prefix or k.startswith(prefix)))  # state keys
    groups = ", ".join(dict.fromkeys(k.partition("/")[0] for k in differ))
    return f"differs at batch {batch}: {len(differ)} of {len(a)} values (in {groups}), first {first}; {cause}"


def main(cli_main: Callable, args: list[str] | None = None) -> list[tuple[str, str]]:
    args = list(args or [])
    if {"-h", "--help"} & set(args):
        print(f"usage: {program()} verify [fit options: --config, --model, --data, ...]\n\n{__doc__}")
        return []
    return verify(cli_main, args)
