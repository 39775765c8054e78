"""Launch mistakes, refused at parse time in one line: rank variables no launcher set, several nodes no launcher set
up, a torchrun world of another size than the Trainer's, a MASTER_PORT another process holds.

Lightning believes RANK, LOCAL_RANK and WORLD_SIZE whoever set them: left over in a shell (or copied from a job
script) they make a lone process rank 1 of a job that does not exist, which trains, logs nothing and exits 0.
torchrun starting 2 processes for a Trainer of 1 device runs two independent fits. A MASTER_PORT already taken ends
Lightning's own launch in a DistNetworkError on rank zero while the rank it started waits 30 minutes for it.
"""

import os
import socket

from lightning.fabric.plugins.environments import (
    LSFEnvironment,
    MPIEnvironment,
    SLURMEnvironment,
    TorchElasticEnvironment,
)

from lightning_runs.checks.preflight import device_count
from lightning_runs.errors import UsageError

# Launchers that start every rank themselves, as Lightning detects them (their public `detect`).
EXTERNAL = {
    "torchrun": TorchElasticEnvironment,
    "SLURM": SLURMEnvironment,
    "LSF": LSFEnvironment,
    "MPI": MPIEnvironment,
}
# What Lightning's own launcher sets for each rank it starts (Lightning 2.6.6, _SubprocessScriptLauncher).
LIGHTNING_CHILD = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "LOCAL_RANK", "WORLD_SIZE")


def check_launch(trainer) -> None:
    """`trainer`: the parsed --trainer options. Nothing is checked on the ranks Lightning started itself: their rank
    zero checked the same command before starting them."""
    launcher = next((name for name, environment in EXTERNAL.items() if environment.detect()), None)
    if launcher is None and all(name in os.environ for name in LIGHTNING_CHILD):
        return
    if launcher is None:
        _check_no_stray_ranks()
        nodes = trainer.num_nodes or 1
        if nodes > 1 and not {"MASTER_ADDR", "NODE_RANK"} <= set(os.environ):  # by hand: Lightning's environment
            raise UsageError(
                f"--trainer.num_nodes {nodes}: no launcher set up the nodes (SLURM's srun, torchrun, or"
                " MASTER_ADDR and NODE_RANK on each node), so this process would wait for the others forever;"
                " start it through one (srun, torchrun) or give 1"
            )
        if device_count(trainer.devices) != 1 or nodes > 1:
            _check_port_free()
    elif launcher == "torchrun":
        _check_torchrun_world(trainer)


def _check_no_stray_ranks() -> None:
    # A general-purpose multi-node launch (Lightning's docs) sets WORLD_SIZE with MASTER_ADDR; nothing but a launcher
    # sets RANK or LOCAL_RANK.
    stray = [f"{k}={os.environ[k]}" for k in ("RANK", "LOCAL_RANK") if os.environ.get(k, "0") != "0"]
    if os.environ.get("WORLD_SIZE", "1") != "1" and "MASTER_ADDR" not in os.environ:
        stray.append(f"WORLD_SIZE={os.environ['WORLD_SIZE']}")
    if stray:
        raise UsageError(
            f"{' '.join(stray)} set, but no launcher (torchrun, SLURM, Lightning's own) started this process: it"
            " would run as one rank of a job that does not exist and log nothing; unset them"
        )


def _check_torchrun_world(trainer) -> None:
    per_node, world = int(os.environ["LOCAL_WORLD_SIZE"]), int(os.environ["WORLD_SIZE"])
    devices, nodes = device_count(trainer.devices), trainer.num_nodes or 1
    if devices is not None and devices != per_node:
        raise UsageError(
            f"torchrun started {per_node} processes per node (--nproc_per_node {per_node}) but --trainer.devices is"
            f" {trainer.devices}: pass --trainer.devices {per_node} (the two must be equal)"
        )
    if per_node * nodes != world:
        raise UsageError(
            f"torchrun started {world} processes ({world // per_node} nodes) but --trainer.num_nodes is {nodes}:"
            f" pass --trainer.num_nodes {world // per_node}"
        )


def _check_port_free() -> None:
    port = os.environ.get("MASTER_PORT")
    if port is None:  # Lightning picks a free one
        return
    if not (port.strip().isdigit() and 1 <= int(port) <= 65535):  # 99999 was an OverflowError traceback from bind
        raise UsageError(
            f"MASTER_PORT={port}: not a port number (1 to 65535); unset MASTER_PORT (Lightning then picks a free port)"
            " or give one in that range"
        )
    # Rank zero's store listens on every address, with SO_REUSEADDR: a port left in TIME_WAIT by an earlier run is
    # free to it, one another process listens on (or holds bound) is not.
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", int(port)))
        except OSError as error:
            reason = getattr(error, "strerror", None) or str(error)
            raise UsageError(
                f"MASTER_PORT={port}: cannot listen there ({reason}); unset MASTER_PORT (Lightning then picks a free"
                " port) or choose another"
            ) from None
