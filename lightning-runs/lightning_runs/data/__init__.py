"""Batches for DataModules that hold tensors: a seeded split, a sampler that shards across ranks, a fold of K."""

from lightning_runs.data.batches import Batch, ShardSampler, TensorBatches, on_device, split_indices
from lightning_runs.data.folds import fold_indices

__all__ = ["Batch", "ShardSampler", "TensorBatches", "fold_indices", "on_device", "split_indices"]
