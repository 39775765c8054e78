"""In-memory batches, plain PyTorch: the seeded split, each rank's sample order, and batches sliced from tensors.

No Lightning here: a plain PyTorch loop can draw the same split and order from these, so the baseline it times
cannot drift from the project's data.
"""

from collections.abc import Iterator

import torch
from torch.utils.data import DistributedSampler, random_split

Batch = tuple[torch.Tensor, ...]
SPLITS = ("val", "test", "train")  # split_indices' cuts, in random_split's order


class ShardSampler(DistributedSampler):
    """The order in which this rank sees the samples: DistributedSampler's for training (a permutation of its own
    generator seeded by (seed, epoch), the same on every rank and independent of the global RNG, so resumed and
    uninterrupted runs see the same order; padded by wrapping around so every rank steps equally often). Evaluation
    neither shuffles nor pads: each sample counts once.
    """

    def __init__(self, n: int, shuffle: bool, seed: int = 0, rank: int = 0, world_size: int = 1) -> None:
        # Each epoch's permutation seeded by seed * 100_003 + epoch, as before this was a DistributedSampler: a
        # checkpoint of an earlier run resumes on the same order.
        super().__init__(range(n), world_size, rank, shuffle, seed * 100_003)  # ty: ignore[invalid-argument-type]  # any sequence is sampled
        if not shuffle:
            self.num_samples = len(range(rank, n, world_size))

    def __iter__(self) -> Iterator[int]:
        return super().__iter__() if self.shuffle else iter(range(self.rank, len(self.dataset), self.num_replicas))  # ty: ignore[invalid-argument-type]  # a range

    def indices(self) -> torch.Tensor:
        return torch.tensor(list(self), dtype=torch.long)


class TensorBatches:
    """Batches sliced from in-memory tensors: one index operation per batch, no per-sample Python, no workers.

    Stateful: a checkpoint taken mid-epoch records how many batches were handed out, and the resumed run
    continues with the next one. Lightning finds `sampler.set_epoch` as it does on a DataLoader.
    """

    batch_sampler = None  # read by Lightning's DataLoader checks; batches are sliced here instead

    def __init__(self, tensors: Batch, batch_size: int, sampler: ShardSampler, drop_last: bool = False) -> None:
        self.tensors, self.batch_size, self.sampler, self.drop_last = tensors, batch_size, sampler, drop_last
        self.position = 0  # batches of the current epoch handed out so far
        self._resume_at = 0

    def __len__(self) -> int:
        batches, rest = divmod(len(self.sampler), self.batch_size)
        return batches + int(rest > 0 and not self.drop_last)

    def __iter__(self) -> Iterator[Batch]:
        start, self._resume_at = self._resume_at, 0
        indices = self.sampler.indices()
        for i in range(start, len(self)):
            self.position = i + 1  # before yielding: a checkpoint taken after this batch resumes at the next
            batch = indices[i * self.batch_size : (i + 1) * self.batch_size]
            yield tuple(t[batch] for t in self.tensors)

    def state_dict(self) -> dict[str, int]:
        return {"position": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self._resume_at = state["position"] if state["position"] < len(self) else 0


def on_device(tensors: Batch, device: torch.device, max_share: float = 0.25) -> Batch:
    """The tensors moved to a GPU once if they take under `max_share` of its free memory, so that batches are
    gathered there instead of copied from the host every step; anything else stays where it is."""
    if device.type != "cuda":
        return tensors
    free, _ = torch.cuda.mem_get_info(device)
    size = sum(t.numel() * t.element_size() for t in tensors)
    return tuple(t.to(device) for t in tensors) if size < max_share * free else tensors


def split_indices(n: int, val: float, test: float, seed: int) -> dict[str, torch.Tensor]:
    """A seeded permutation of range(n) cut into val, test and train (the rest), as index tensors: torch's
    `random_split` with its own generator; `val` and `test` are fractions of n."""
    n_val, n_test = round(n * val), round(n * test)
    parts = random_split(range(n), [n_val, n_test, n - n_val - n_test], torch.Generator().manual_seed(seed))  # ty: ignore[invalid-argument-type]  # torch's stub says Dataset; any sequence is split
    return {name: torch.as_tensor(part.indices, dtype=torch.long) for name, part in zip(SPLITS, parts, strict=True)}
