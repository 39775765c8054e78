"""Models larger than one device: FSDP for any LightningModule (sharding)."""

from lightning_runs.parallel.sharding import FSDP

__all__ = ["FSDP"]
