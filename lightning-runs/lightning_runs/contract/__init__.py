"""What the machinery reads of the owner's code: the DataModule's and LightningModule's parts (parts), the links
from data to model (links), and the kind of task a batch and an output are (tasks).
The list: `python -m pydoc lightning_runs.contract.parts`."""

from lightning_runs.contract.links import link_data_to_model, model_parameters, shape_from_batch
from lightning_runs.contract.parts import (
    SampleKind,
    counterpart,
    example_input,
    monitored,
    monitored_checkpoint,
    sample_kind,
)
from lightning_runs.contract.tasks import inputs_and_targets, output_task, target_task

__all__ = [
    "SampleKind",
    "counterpart",
    "example_input",
    "inputs_and_targets",
    "link_data_to_model",
    "model_parameters",
    "monitored",
    "monitored_checkpoint",
    "output_task",
    "sample_kind",
    "shape_from_batch",
    "target_task",
]
