"""Export of a trained module: ONNX, TorchScript or torch.export files checked against the eager module."""

from lightning_runs.export.exporting import exported

__all__ = ["exported"]
