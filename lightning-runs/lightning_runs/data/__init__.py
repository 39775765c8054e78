"""Batches for DataModules that hold tensors: a seeded split, a sampler that shards across ranks."""

from lightning_runs.data.batches import Batch, ShardSampler, TensorBatches, on_device, split_indices

__all__ = ["Batch", "ShardSampler", "TensorBatches", "on_device", "split_indices"]
