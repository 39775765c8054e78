"""`--compile.enabled true`: torch.compile for any LightningModule, its checkpoints unchanged.

A callback rather than a model option (`--model.compile`): it works for a module of any class, with no line of the
owner's code, and Lightning's CLI configures it as any other callback (`--compile.mode max-autotune`).

Each network of the module is compiled in place with `nn.Module.compile`: `torch.compile(network)` would wrap it,
and every key of its state_dict would gain an `_orig_mod.` prefix, so that checkpoints of compiled and eager runs no
longer load into each other. In place, the keys stay the eager ones: a checkpoint of either loads into the other,
resumes, exports (export rebuilds the module eager) and predicts.
"""

from typing import Literal

import torch
from lightning.pytorch.callbacks import Callback

from lightning_runs.contract.parts import networks
from lightning_runs.errors import UsageError

# torch.compile's modes (its documentation); "reduce-overhead" captures CUDA graphs, pays on small GPU batches.
Mode = Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]


class Compile(Callback):
    """torch.compile for the LightningModule's networks, in place: checkpoints keep an eager run's keys.

    Its networks are its submodules with parameters (`networks`), compiled as the run sets up.

    Args:
        enabled: compile; off by default: the first batches pay for compilation (~20 s on a CPU), which a short
            fit or a small network does not earn back.
        mode: torch.compile's mode.
        fullgraph: refuse graph breaks (an error names the line) instead of running them eagerly.
        dynamic: compile for varying batch sizes from the start (None: after the first size change).
    """

    def __init__(
        self, enabled: bool = False, mode: Mode = "default", fullgraph: bool = False, dynamic: bool | None = None
    ) -> None:
        self.enabled, self.mode, self.fullgraph, self.dynamic = enabled, mode, fullgraph, dynamic
        self.compiled: list[str] = []  # the names of the networks compiled, for the tests and the reader

    def networks_of(self, pl_module) -> list[tuple[str, torch.nn.Module]]:
        """What `setup` compiles; a module with nothing to compile is bad input, said before the run writes."""
        found = networks(pl_module)
        if self.enabled and not found:
            raise UsageError(
                f"--compile.enabled true: {type(pl_module).__name__} has no submodule with parameters to compile"
                " (its parameters sit on the LightningModule itself); put the network in a submodule, or drop"
                " --compile.enabled"
            )
        return found

    def setup(self, trainer, pl_module, stage: str) -> None:
        if not self.enabled or self.compiled:
            return
        found = self.networks_of(pl_module)
        for _, network in found:
            network.compile(mode=self.mode, fullgraph=self.fullgraph, dynamic=self.dynamic)
        self.compiled = [name for name, _ in found]
