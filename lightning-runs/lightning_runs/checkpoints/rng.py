"""The process's RNG states (torch, CUDA, numpy, Python) as plain data a checkpoint keeps, and WorkerRandomState: a
dataset whose random draws in a loader's worker processes a resume continues.

StatefulDataLoader(WorkerRandomState(dataset), num_workers=2)
"""

import random
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info


def rng_state(cuda: bool = True) -> dict[str, Any]:
    kind, keys, position, has_gauss, cached = np.random.get_state()
    version, python_state, gauss_next = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if cuda and torch.cuda.is_available() else [],
        "numpy": [kind, keys.tolist(), position, has_gauss, cached],  # ty: ignore[missing-attribute]  # numpy's stub allows the dict form; legacy=True (the default) gives the tuple
        "python": [version, list(python_state), gauss_next],
    }


def set_rng(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    kind, keys, position, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), position, has_gauss, cached))
    version, python_state, gauss_next = state["python"]
    random.setstate((version, tuple(python_state), gauss_next))


class WorkerRandomState(Dataset):
    """`dataset`, whose random draws in a loader's worker processes (an augmentation) a resume continues: each worker's
    RNG states are the dataset's state in torchdata's StatefulDataLoader, restored in the worker (else it starts again
    from its seed). `StatefulDataLoader(WorkerRandomState(dataset), num_workers=2)`."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset

    def __getitem__(self, index):
        return self.dataset[index]

    def __len__(self) -> int:
        return len(self.dataset)  # ty: ignore[invalid-argument-type]  # torch's Dataset declares no __len__; the wrapped one has

    def state_dict(self) -> dict[str, Any]:
        return rng_state(cuda=False) if get_worker_info() else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state and get_worker_info():
            set_rng(state)
