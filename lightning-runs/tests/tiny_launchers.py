"""Starting commands as DDP's launchers start them: several at once (one per node), under torchrun, or as srun's tasks
(a stand-in srun: no SLURM controller runs here). For the library's DDP tests and the template's, which launch its
shipped configs and SLURM script the same way."""

import socket
import subprocess
import sys
from pathlib import Path

import psutil

FAKE_SRUN = """#!/bin/bash
# Stands in for srun on one node: SLURM_NTASKS copies of the command, each with the variables srun gives a task.
pids=()
for ((task = 0; task < SLURM_NTASKS; task++)); do
    SLURM_PROCID=$task SLURM_LOCALID=$task SLURM_NODEID=0 "$@" &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch(home: Path, *commands: list[str], env: dict | None = None, timeout: float = 600) -> list[str]:
    """Start the commands together (one per node), wait for all, assert that all exit 0; their outputs."""
    from tiny_runs import process_environment  # here: postgres_server.py takes free_port without Lightning's import

    logs = [home / f"launch-{i}.log" for i in range(len(commands))]
    procs = []
    for command, log in zip(commands, logs, strict=True):
        with log.open("w") as out:
            procs.append(subprocess.Popen(command, cwd=home, env=env or process_environment(), stdout=out, stderr=out))
    try:
        for proc in procs:
            proc.wait(timeout=timeout)  # only against a hang: a run takes well under a minute
    finally:
        for proc in procs:
            if proc.poll() is None:
                for child in [*psutil.Process(proc.pid).children(recursive=True), proc]:
                    child.kill()
                proc.wait()
    outputs = [log.read_text() for log in logs]
    for proc, output in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, output[-4000:]
    return outputs


def torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", *args]  # what the `torchrun` script runs


def two_nodes(fit: list[str]) -> list[list[str]]:
    """Two torchrun agents on one machine, as on two nodes: one process each, meeting at node 0's address. `fit`: the
    command after torchrun's options (`-m <package> fit ...`)."""
    port = free_port()
    return [
        torchrun("--nnodes=2", f"--node_rank={node}", "--nproc_per_node=1", "--master_addr=127.0.0.1",
                 f"--master_port={port}", *fit, "--trainer.devices=1")
        for node in (0, 1)
    ]  # fmt: skip


def fake_srun(home: Path) -> Path:
    """`home`/bin holding the stand-in srun: the folder to put first on a job's PATH."""
    folder = home / "bin"
    folder.mkdir(exist_ok=True)
    (folder / "srun").write_text(FAKE_SRUN)
    (folder / "srun").chmod(0o755)
    return folder
