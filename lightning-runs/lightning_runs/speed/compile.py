"""Compile: torch.compile for any LightningModule's networks, in place, so checkpoints keep an eager run's keys.

    Trainer(callbacks=[Compile(enabled=True)])

`torch.compile(network)` would wrap each network and prefix every state_dict key with `_orig_mod.`: checkpoints of
compiled and eager runs would no longer load into each other. `nn.Module.compile` compiles in place.
"""

from typing import Literal

import torch
from lightning.pytorch.callbacks import Callback

from lightning_runs.errors import UsageError

Mode = Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]


def networks(module: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """A module's networks: each child holding parameters with a forward of its own; containers (ModuleList,
    ModuleDict) are searched inside. Metrics (torchmetrics) and parameter-free parts are none."""
    found = []
    for name, child in module.named_children():
        metric = any(cls.__module__.startswith("torchmetrics") for cls in type(child).__mro__)
        if metric or next(child.parameters(), None) is None:
            continue
        if type(child).forward is torch.nn.Module.forward:  # a container: never called itself
            found += [(f"{name}.{inner}", network) for inner, network in networks(child)]
        else:
            found.append((name, child))
    return found


class Compile(Callback):
    """Args:
    enabled: compile; off by default: the first batches pay for compilation (~20 s on a CPU).
    mode: torch.compile's mode.
    fullgraph: refuse graph breaks instead of running them eagerly.
    dynamic: compile for varying batch sizes from the start (None: after the first size change).
    """

    def __init__(
        self, enabled: bool = False, mode: Mode = "default", fullgraph: bool = False, dynamic: bool | None = None
    ) -> None:
        self.enabled, self.mode, self.fullgraph, self.dynamic = enabled, mode, fullgraph, dynamic
        self.compiled: list[str] = []

    def setup(self, trainer, pl_module, stage: str) -> None:
        if self.enabled and not networks(pl_module):  # before the sanity check: nothing has run
            raise UsageError(
                f"Compile: {type(pl_module).__name__} has no submodule with parameters to compile; put its network in"
                " a submodule, or leave compiling off"
            )
        if stage != "fit":
            self._compile(pl_module)

    def on_train_start(self, trainer, pl_module) -> None:
        # After the model summary (a fit's on_fit_start), which runs forward under a dispatch mode that a fullgraph
        # compilation breaks on; the sanity check before it runs eagerly.
        self._compile(pl_module)

    def _compile(self, pl_module) -> None:
        if not self.enabled or self.compiled:
            return
        found = networks(pl_module)
        for _, network in found:
            network.compile(mode=self.mode, fullgraph=self.fullgraph, dynamic=self.dynamic)
        self.compiled = [name for name, _ in found]
