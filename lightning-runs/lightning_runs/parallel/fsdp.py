"""`trainer.strategy: {class_path: lightning_runs.parallel.FSDP}` in a config: torch's FSDP2 (`fully_shard`) for any
LightningModule, on GPUs or on CPUs (gloo).

Lightning's own FSDPStrategy (FSDP1) refuses a CPU; its ModelParallelStrategy runs FSDP2 anywhere but asks the
module to shard itself in `configure_model`. This one does it for a module that does not: each block of each of its
networks (speed/compile.py: networks), then the network, over every process (data parallel, no tensor parallelism).
A module with its own `configure_model` shards itself, as Lightning documents.

Checkpoints are one file, the full state gathered on rank zero (`save_distributed_checkpoint=False`), or with
`save_distributed_checkpoint: true` a folder of the same name (`checkpoints/last.ckpt/`), one shard per process and
no full state anywhere: what a model whose full state does not fit rank zero's host memory needs. Each folder is
whole or absent (checkpoints/sharded.py). A fit resumes from either form, each rank reading its own shard; what
reads a checkpoint in one process (test or predict on another strategy, export, the checks before a command)
consolidates a folder there, so it needs the full state to fit that host's memory.
"""

from datetime import timedelta
from pathlib import Path
from types import MethodType
from typing import Literal

import torch
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout
from lightning.pytorch.strategies import ModelParallelStrategy
from lightning.pytorch.utilities.model_helpers import is_overridden

from lightning_runs.checkpoints.checkpoint_io import refuse_non_finite
from lightning_runs.checkpoints.sharded import save_sharded
from lightning_runs.distributed import this_ranks_part
from lightning_runs.errors import Diverged, UsageError
from lightning_runs.speed.compile import networks


class FSDP(ModelParallelStrategy):
    """Lightning's ModelParallelStrategy sharding the module's networks itself (FSDP2)."""

    def __init__(
        self,
        data_parallel_size: Literal["auto"] | int = "auto",
        tensor_parallel_size: int = 1,
        save_distributed_checkpoint: bool = False,
        process_group_backend: str | None = None,
        timeout: timedelta = default_pg_timeout,
    ) -> None:
        # Every process one data-parallel shard by default: FSDP alone (Lightning's "auto" would make the processes
        # of a node one tensor-parallel group instead).
        super().__init__(
            data_parallel_size, tensor_parallel_size, save_distributed_checkpoint, process_group_backend, timeout
        )

    def connect(self, model) -> None:
        super().connect(model)
        if is_overridden("configure_model", model):
            return  # it shards itself
        inside = {id(p) for _, network in networks(model) for p in network.parameters()}
        outside = [name for name, p in model.named_parameters() if id(p) not in inside]
        if outside:  # FSDP2 syncs only what it shards: these would drift apart on every process
            raise UsageError(
                f"FSDP: {type(model).__name__}'s parameter {outside[0]} sits in no network (a submodule with a"
                " forward); put it in one, or shard the module yourself in its configure_model()"
            )
        # An attribute of this instance, not of its class: Lightning calls it where a module shards itself.
        model.configure_model = MethodType(_shard_networks, model)

    def setup_environment(self) -> None:
        if self._data_parallel_size == "auto":
            self._data_parallel_size = self.num_nodes * self.num_processes // self._tensor_parallel_size  # ty: ignore[unsupported-operator]  # an int here: "auto" is Lightning's for data_parallel_size only
        super().setup_environment()

    def save_checkpoint(self, checkpoint, filepath, storage_options=None) -> None:
        if not self._save_distributed_checkpoint:  # one file, through the run's checkpoint IO (atomic)
            return super().save_checkpoint(checkpoint, filepath, storage_options)
        # As the single-file writer (checkpoints/io.py), no checkpoint of non-finite weights: each rank checks its
        # own shard, and all refuse if one finds any (one rank alone raising would leave the others waiting).
        local = {k: this_ranks_part(t) for k, t in checkpoint["state_dict"].items()}
        try:
            refuse_non_finite(local, filepath)
            finite = True
        except Diverged:
            finite = False
        if not self.reduce_boolean_decision(finite, all=True):
            raise Diverged(f"refusing to write {filepath}: non-finite values in the weights")
        # Lightning's own writes the shards into the checkpoint's folder itself: a kill mid-save left a folder of
        # old and new shards. Written beside it, then swapped in.
        save_sharded(self, checkpoint, Path(filepath))

    def training_step(self, *args, **kwargs):
        # FSDP shards parameters only: each rank's buffers (BatchNorm's running statistics) would follow its own
        # shard of the data, and a resumed run would give every rank rank zero's. As DDP does (broadcast_buffers),
        # every rank takes rank zero's before each forward.
        for buffer in self.lightning_module.buffers():  # ty: ignore[missing-union-attribute]  # Lightning's Optional: set while fitting
            torch.distributed.broadcast(buffer, src=0)
        return super().training_step(*args, **kwargs)


def _shard_networks(module) -> None:
    from torch.distributed.fsdp import FSDPModule, fully_shard

    mesh = module.device_mesh["data_parallel"]
    for _, network in networks(module):  # every parameter is in one of them (FSDP.connect)
        if isinstance(network, FSDPModule):  # configure_model runs again for each Trainer call (fit, then test)
            continue
        for block in network.children():  # one all-gather a block: only one block's full weights at a time
            if next(block.parameters(), None) is not None:
                fully_shard(block, mesh=mesh)
        # Resharded after every forward, as the blocks are: a root left unsharded after an evaluation's forward (no
        # backward follows) could not be freed for the next checkpoint's state_dict on a CPU ("Trying to resize
        # storage that is not resizable", torch 2.14): a network that is one Linear crashed at its first save.
        fully_shard(network, mesh=mesh, reshard_after_forward=True)
