"""What a DataModule read, as a fingerprint its checkpoint state carries: a fit resumed on other data is refused in one
line, where it would go on silently not exact (12 images added: 34 steps an epoch where the run had 32).

    def state_dict(self): return {"data": self.read, ...}  # self.read = fingerprint(n, samples, labels) at setup
    def load_state_dict(self, state): check_same_data(self, state.get("data"), lambda: self.read, "my data")
"""

import hashlib
from collections.abc import Callable

import numpy as np
import torch

from lightning_runs.errors import UsageError


def fingerprint(count: int, *parts, unit: str = "samples") -> str:
    """`count` and a hash of `parts`: tensors and arrays by their bytes (any dtype), anything else by its repr."""
    digest = hashlib.blake2b(digest_size=8)
    for part in parts:
        part = part.cpu().flatten().view(torch.uint8).numpy() if isinstance(part, torch.Tensor) else part
        digest.update(np.ascontiguousarray(part).data if isinstance(part, np.ndarray) else repr(part).encode())
    return f"{count} {unit} #{digest.hexdigest()}"


def check_same_data(datamodule, saved: str | None, read: Callable[[], str | None], what: str) -> None:
    """On a fit's resume, the data `what` is what the checkpoint's run read (`saved`: its fingerprint, None in a
    checkpoint older than it; `read()`: this one's, read only then); an evaluation may read other data, or none (a
    predict from a checkpoint needs no training file)."""
    fitting = datamodule.trainer is not None and datamodule.trainer.state.fn == "fit"
    if fitting and saved is not None and saved != (now := read()):
        raise UsageError(
            f"{what}: not the data the checkpoint's run read ({saved} then, {now} now), so the resume would not be"
            " exact; put the data back as it was, or start a new run (trainer.fit(..., ckpt_path=None))"
        )
