"""`trainer.strategy: {class_path: lightning_runs.parallel.FSDP}` in a config: torch's FSDP2 (`fully_shard`) for any
LightningModule, on GPUs or on CPUs (gloo).

Lightning's own FSDPStrategy (FSDP1) refuses a CPU; its ModelParallelStrategy runs FSDP2 anywhere but asks the
module to shard itself in `configure_model`. This one does it for a module that does not: each block of each of its
networks (contract/parts.py), then the network, over every process (data parallel, no tensor parallelism). A module
with its own `configure_model` shards itself, as Lightning documents.

Checkpoints are one file, the full state gathered on rank zero (`save_distributed_checkpoint=False`): everything
that reads a run's checkpoints (resume, `--ckpt_path best|last`, test, predict, export, `runs`) reads them as any
other. A model whose full state does not fit rank zero's host memory needs sharded checkpoints (a folder of shards
per checkpoint), which run folders do not keep yet: refused in one line.
"""

from datetime import timedelta
from types import MethodType
from typing import Literal

import torch
from lightning.fabric.plugins.collectives.torch_collective import default_pg_timeout
from lightning.pytorch.strategies import ModelParallelStrategy
from lightning.pytorch.utilities import CombinedLoader
from lightning.pytorch.utilities.model_helpers import is_overridden

from lightning_runs.contract.parts import networks
from lightning_runs.errors import UsageError


class FSDP(ModelParallelStrategy):
    """Lightning's ModelParallelStrategy sharding the module's networks itself (FSDP2), one checkpoint file each."""

    def __init__(
        self,
        data_parallel_size: Literal["auto"] | int = "auto",
        tensor_parallel_size: int = 1,
        save_distributed_checkpoint: bool = False,
        process_group_backend: str | None = None,
        timeout: timedelta = default_pg_timeout,
    ) -> None:
        self.sharded_checkpoints = save_distributed_checkpoint  # refused by `check`, before the run writes
        # Every process one data-parallel shard by default: FSDP alone (Lightning's "auto" would make the processes
        # of a node one tensor-parallel group instead).
        super().__init__(data_parallel_size, tensor_parallel_size, False, process_group_backend, timeout)

    def check(self, model) -> None:
        """What would fail inside the ranks, refused before the run writes (here, not in __init__: jsonargparse would
        bury an error there in its union error)."""
        if self.sharded_checkpoints:
            raise UsageError(
                "--trainer.strategy.save_distributed_checkpoint true: sharded checkpoints (a folder of shards each)"
                " are not kept by run folders yet; leave it false (one file, gathered on rank zero)"
            )
        if is_overridden("configure_model", model):
            return  # it shards itself
        inside = {id(p) for _, network in networks(model) for p in network.parameters()}
        outside = [name for name, p in model.named_parameters() if id(p) not in inside]
        if outside:  # FSDP2 syncs only what it shards: these would drift apart on every process
            raise UsageError(
                f"FSDP: {type(model).__name__}'s parameter {outside[0]} sits in no network (a submodule with a"
                " forward); put it in one, or shard the module yourself in its configure_model()"
            )

    def setup_environment(self) -> None:
        if self._data_parallel_size == "auto":
            self._data_parallel_size = self.num_nodes * self.num_processes // self._tensor_parallel_size
        super().setup_environment()

    def training_step(self, *args, **kwargs):
        # FSDP shards parameters only: each rank's buffers (BatchNorm's running statistics) would follow its own
        # shard of the data, and a resumed run would give every rank rank zero's. As DDP does (broadcast_buffers),
        # every rank takes rank zero's before each forward.
        for buffer in self.lightning_module.buffers():
            torch.distributed.broadcast(buffer, src=0)
        return super().training_step(*args, **kwargs)

    # Lightning restores a ModelParallelStrategy's checkpoint after setup, but setup already built the training
    # loader (a schedule reading `estimated_stepping_batches`), and the loop then never hands the loader its saved
    # state: a resume mid-epoch started the epoch over (DDP restores before setup, and resumes bit for bit). The
    # saved states are handed to the loaders here, before their first batch is drawn.
    def load_checkpoint(self, checkpoint_path, weights_only: bool | None = None) -> dict:
        checkpoint = super().load_checkpoint(checkpoint_path, weights_only)
        self._loader_states = checkpoint.get("loops", {}).get("fit_loop", {}).get("state_dict", {})
        self._loader_states = self._loader_states.get("combined_loader", [])
        return checkpoint

    def on_train_start(self) -> None:
        super().on_train_start()
        states, self._loader_states = getattr(self, "_loader_states", []), []
        if not states:  # a fit from the start, or from a checkpoint with no loader state
            return
        loaders = CombinedLoader(self.lightning_module.trainer.train_dataloader).flattened
        stateful = [d for d in loaders if hasattr(d, "state_dict") and hasattr(d, "load_state_dict")]  # as Lightning
        for loader, state in zip(stateful, states, strict=True):
            loader.load_state_dict(state)

    def connect(self, model) -> None:
        super().connect(model)
        if not is_overridden("configure_model", model):
            # An attribute of this instance, not of its class: Lightning calls it where a module shards itself.
            model.configure_model = MethodType(_shard_networks, model)


def _shard_networks(module) -> None:
    from torch.distributed.fsdp import FSDPModule, fully_shard

    found = networks(module)  # every parameter is in one of them (FSDP.check)
    mesh = module.device_mesh["data_parallel"]
    for _, network in found:
        if isinstance(network, FSDPModule):  # configure_model runs again for each Trainer call (fit, then test)
            continue
        for block in network.children():  # one all-gather a block: only one block's full weights at a time
            if next(block.parameters(), None) is not None:
                fully_shard(block, mesh=mesh)
        fully_shard(network, mesh=mesh)
