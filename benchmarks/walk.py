"""The walk of a fit, a resume and an evaluation through the library, traced from the code as it runs.

    python -m benchmarks.walk            a table: each command, the library files it crosses, its returns
    python -m benchmarks.walk --write    that table written into docs/development.md, between its markers

Each command runs in a process of its own with a profile hook that sees every Python call (the parts'
constructors and the imports listed apart, not walked), in one temporary folder:
a fit of the default recipe (2 batches an epoch, 3 epochs) stopped by SIGTERM at step 3, its resume by `--ckpt_path
last`, and a test of its last checkpoint. Two phases:
- **composing**: from the command line until Lightning's Trainer starts its run (`Trainer._run`): the parse, the run
  folder, the checkpoint, the module and data built. The walk is the order in which library files are first entered;
  a *return* is a call back into a file that was left earlier and is not on the stack (A calls B, B's work done,
  then A calls into B again counts once: the flow went back to B).
- **running**: the library files whose code runs while the Trainer runs (the parts' hooks), listed, not walked.
"""

import json
import os
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path

from lightning.pytorch.cli import LightningCLI

from benchmarks.common import ENV, ROOT

LIBRARY = ROOT / "lightning-runs/lightning_runs"
TINY = ["--trainer.max_epochs", "3", "--trainer.limit_train_batches", "2", "--trainer.limit_val_batches", "2"]
STOP = ["--trainer.callbacks+=lightning_runs.testing.SignalAt", "--trainer.callbacks.step=3"]  # SIGTERM: exit 143
COMMANDS = {  # run in this order, in one folder: the resume and the test read the fit's run
    "fit (stopped by SIGTERM at step 3)": ["fit", *TINY, *STOP],
    "resume (fit --ckpt_path last)": ["fit", "--ckpt_path", "last", *TINY],
    "evaluation (test --ckpt_path last)": ["test", "--ckpt_path", "last", "--trainer.limit_test_batches", "2"],
}
START, END = "<!-- walk: python -m benchmarks.walk -->", "<!-- end of walk -->"


def trace(argv: list[str], out: Path) -> None:
    """Runs `python -m project <argv>` in this process under the hook; writes what it saw to `out` as JSON."""
    walk, returns, stack, running, left, built = [], 0, [], set(), set(), set()
    phase = {"running": False, "importing": 0, "building": 0}

    def hook(frame, event, _):
        nonlocal returns
        code = frame.f_code
        if event == "call" and code.co_name == "_run" and code.co_filename.endswith("trainer/trainer.py"):
            phase["running"] = True
        if event not in ("call", "return"):
            return
        if code.co_name == "<module>" and frame.f_globals.get("__name__") != "__main__":  # an import, not a step
            phase["importing"] += 1 if event == "call" else -1
        if phase["importing"]:
            return
        name = code.co_filename
        if not name.startswith(str(LIBRARY)):
            return
        name = str(Path(name).relative_to(LIBRARY.parent))
        if phase["running"]:
            running.add(name)
            return
        if code.co_name == "__init__" and not isinstance(frame.f_locals.get("self"), LightningCLI):  # a part built
            phase["building"] += 1 if event == "call" else -1
            built.add(name)
        if phase["building"]:
            return
        if event == "return":
            if stack:
                stack.pop()
            if name not in stack:
                left.add(name)
            return
        if name not in walk:
            walk.append(name)
        elif name in left and name not in stack:
            returns += 1
            left.discard(name)
        stack.append(name)

    sys.argv = ["project", *argv]
    sys.setprofile(hook)
    try:
        runpy.run_module("project", run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (None, 0, 143):
            raise
    finally:
        sys.setprofile(None)
    out.write_text(
        json.dumps({"walk": walk, "returns": returns, "built": sorted(built), "running": sorted(running - set(walk))})
    )


def walks() -> dict[str, dict]:
    seen = {}
    with tempfile.TemporaryDirectory() as work:
        for label, argv in COMMANDS.items():
            out = Path(work) / "walk.json"
            command = [sys.executable, "-m", "benchmarks.walk", "--trace", str(out), *argv]
            subprocess.run(command, cwd=work, env={**ENV, "OMP_NUM_THREADS": "1"}, check=True, capture_output=True)
            seen[label] = json.loads(out.read_text())
    return seen


def table(seen: dict[str, dict]) -> str:
    rows = ["| command | files crossed while composing | returns | the walk (files in the order first entered) |"]
    rows.append("|---|---:|---:|---|")
    for label, walk in seen.items():
        order = " → ".join(f"`{name.removeprefix('lightning_runs/')}`" for name in walk["walk"])
        rows.append(f"| {label} | {len(walk['walk'])} | {walk['returns']} | {order} |")
    rows.append("")
    for label, walk in seen.items():
        built, running = (
            ", ".join(f"`{name.removeprefix('lightning_runs/')}`" for name in walk[key]) for key in ("built", "running")
        )
        rows.append(f"- {label}: the parts built from {built}; while the Trainer runs, also {running or 'nothing'}")
    return "\n".join(rows)


def main() -> None:
    if sys.argv[1:2] == ["--trace"]:
        return trace(sys.argv[3:], Path(sys.argv[2]))
    text = table(walks())
    if "--write" not in sys.argv:
        return print(text)
    doc = ROOT / "docs/development.md"
    before, rest = doc.read_text().split(START)
    doc.write_text(f"{before}{START}\n{text}\n{END}{rest.split(END)[1]}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
