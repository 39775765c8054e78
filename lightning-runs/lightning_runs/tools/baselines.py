"""scikit-learn baselines for the seed study (tools/seeds.py), by the task the targets show (tasks.py): SVC and
logistic regression accuracy for integer class labels, a ridge regression's MSE, MAE and R^2 for one float value a
sample. Fitted on every batch of a train loader and scored on every batch of a test loader, the inputs flattened to
one row a sample; only where both hold (tensor inputs, tensor targets) batches of at most MAX_SAMPLES samples and
MAX_VALUES values. Otherwise none, and why."""

import torch
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from lightning_runs.contract.tasks import inputs_and_targets, target_task

CLASSIFIERS = {
    "svc": lambda: SVC(C=10),
    "logistic_regression": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
}
REGRESSORS = {"ridge": lambda: make_pipeline(StandardScaler(), Ridge())}
REGRESSION_SCORES = {"mse": mean_squared_error, "mae": mean_absolute_error, "r2": r2_score}

# Samples of a split: SVC's fit grows with their square or worse (2,000 samples of 64 values: 0.13 s here, 10,000:
# 3 s, so 20,000 ~12 s a seed and 100,000 minutes to hours). A larger set wants a baseline of its own, not this table.
MAX_SAMPLES = 20_000
# Values of a split, held as float32 tensors and again as the scaler's float64 copy: 2**25 values are ~400 MB in all
# (20,000 images of 3x224x224 would be 3 billion values, 36 GB).
MAX_VALUES = 2**25


def is_baseline(column: str) -> bool:
    return column.startswith(tuple(f"{name}_" for name in [*CLASSIFIERS, *REGRESSORS]))


def measure(column: str) -> str:
    """What a baseline's column measures, as a model's metric would name it: `svc_acc` -> `acc`."""
    return next(
        column.removeprefix(f"{name}_") for name in [*CLASSIFIERS, *REGRESSORS] if column.startswith(f"{name}_")
    )


def baselines(train_loader, test_loader) -> dict[str, float] | str:
    """Each baseline's scores on the test split (`svc_acc`, `ridge_mse`, ...), or why there are none."""
    train = _arrays(train_loader, "train")
    if isinstance(train, str):
        return train
    test = _arrays(test_loader, "test")
    if isinstance(test, str):
        return test
    (train_x, train_y), (test_x, test_y) = train, test
    task = target_task(train_y)
    if task is None or target_task(test_y) != task:
        return "the targets are neither (N,) integer class labels nor one float value a sample in both splits"
    train_x, train_y, test_x, test_y = (t.numpy() for t in (train_x, train_y, test_x, test_y))
    if task == "classification":
        return {f"{name}_acc": make().fit(train_x, train_y).score(test_x, test_y) for name, make in CLASSIFIERS.items()}
    train_y, test_y = train_y.reshape(-1), test_y.reshape(-1)  # (N, 1) targets as (N,)
    scores = {}
    for name, make in REGRESSORS.items():
        predicted = make().fit(train_x, train_y).predict(test_x)
        scores.update({f"{name}_{score}": float(f(test_y, predicted)) for score, f in REGRESSION_SCORES.items()})
    return scores


def _arrays(loader, split: str) -> tuple[torch.Tensor, torch.Tensor] | str:
    """Every batch's inputs, flattened to one row a sample, and targets, on the CPU; or why not. Stops reading at the
    first batch past a bound: a large split is never loaded whole."""
    inputs, targets, samples, values = [], [], 0, 0
    for batch in loader:
        pair = inputs_and_targets(batch)
        if pair is None:
            return f"the {split} batches are not (tensor inputs, tensor targets, ...)"
        samples, values = samples + len(pair[0]), values + pair[0].numel()
        if samples > MAX_SAMPLES or values > MAX_VALUES:
            return f"the {split} split is larger than {MAX_SAMPLES} samples or {MAX_VALUES} values (baselines.py)"
        inputs.append(pair[0].detach().cpu().flatten(1).float())
        targets.append(pair[1].detach().cpu())
    if not inputs:
        return f"the {split} split is empty"
    return torch.cat(inputs), torch.cat(targets)
