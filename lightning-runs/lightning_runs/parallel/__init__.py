"""Models larger than one device: FSDP, torch's fully_shard for any LightningModule."""

from lightning_runs.parallel.fsdp import FSDP

__all__ = ["FSDP"]
