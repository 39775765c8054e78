"""Export of a trained checkpoint: the model and data class it names (saved_modules), and ONNX, TorchScript or
torch.export files checked against the eager model (formats)."""

from lightning_runs.export.formats import exported
from lightning_runs.export.saved_modules import saved_data_class, saved_model

__all__ = ["exported", "saved_data_class", "saved_model"]
