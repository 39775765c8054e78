"""Fold k of K for cross-validation (`python -m <package> cv`): the part of a DataModule's samples that validates, and
the rest that trains; seeded, so each fold's run, and its resume, takes the same samples."""

import numpy as np
import torch

from lightning_runs.errors import UsageError


def fold_indices(n: int, folds: int, fold: int, seed: int, labels: torch.Tensor | None = None):
    """(train, val) positions in range(n), as index tensors: fold `fold` (0-based) of `folds`, stratified by `labels`
    where they are classes (integers), so each fold holds the classes in their proportions; a regression's targets
    (floating point) are folded unstratified. UsageError where the samples cannot make `folds` folds."""
    from sklearn.model_selection import KFold, StratifiedKFold  # here: scikit-learn is 0.27 s of every start-up

    call = f"fold_indices(..., folds={folds})"
    if not 2 <= folds <= n or not 0 <= fold < folds:
        raise UsageError(f"{call} (fold {fold}): folds must be 2 to the {n} samples, fold 0 to folds - 1")
    target = None if labels is None else np.asarray(labels)
    classes = target is not None and target.dtype.kind in "biu"
    largest = np.unique(target, return_counts=True)[1].max() if classes else n
    if largest < folds:  # StratifiedKFold's ValueError; fewer in some classes only, it warns and folds them unevenly
        raise UsageError(f"{call}: more folds than the largest class has samples ({largest})")
    splitter = (StratifiedKFold if classes else KFold)(folds, shuffle=True, random_state=seed)
    # (n, 1) zeros: the splitters read only the sample count from X.
    train, val = list(splitter.split(np.zeros((n, 1)), target if classes else None))[fold]
    return torch.from_numpy(train), torch.from_numpy(val)
