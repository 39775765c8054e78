"""Fold k of K for cross-validation (`python -m <package> cv`): the part of a DataModule's samples that validates, and
the rest that trains; seeded, so each fold's run, and its resume, takes the same samples."""

import numpy as np
import torch


def fold_indices(n: int, folds: int, fold: int, seed: int, labels: torch.Tensor | None = None):
    """(train, val) positions in range(n), as index tensors: fold `fold` (0-based) of `folds`, stratified by `labels`
    (one class per sample) where given, so each fold holds the classes in their proportions."""
    from sklearn.model_selection import KFold, StratifiedKFold  # here: scikit-learn is 0.27 s of every start-up

    if not 2 <= folds <= n or not 0 <= fold < folds:
        raise ValueError(f"fold {fold} of {folds}: folds must be 2 to the {n} samples, fold 0 to folds - 1")
    splitter = (StratifiedKFold if labels is not None else KFold)(folds, shuffle=True, random_state=seed)
    # (n, 1) zeros: the splitters read only the sample count from X.
    target = None if labels is None else np.asarray(labels)
    train, val = list(splitter.split(np.zeros((n, 1)), target))[fold]
    return torch.from_numpy(train), torch.from_numpy(val)
