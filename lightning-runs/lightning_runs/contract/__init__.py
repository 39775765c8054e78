"""What the machinery reads of the owner's code: the DataModule's and LightningModule's parts (parts), the links
from data to model (links), the kind of task a batch and an output are (tasks), and the names it goes by (names: how
metrics are named, which model parameters the data fills), which need no torch.
The list: `python -m pydoc lightning_runs.contract.parts`.

Each name below is imported from its module when first used, so that reading `names` (the `runs` table does)
imports no torch."""

import importlib

_MODULES = {
    "links": ("link_data_to_model", "model_parameters", "shape_from_batch"),
    "names": ("counterpart",),
    "parts": ("SampleKind", "example_input", "monitored", "monitored_checkpoint", "networks", "sample_kind"),
    "tasks": ("inputs_and_targets", "output_task", "target_task"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
