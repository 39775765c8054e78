"""scikit-learn baselines for the seeds tool, for the task it is told: SVC and logistic regression accuracy for a
classification, a ridge regression's MSE, MAE and R^2 for a regression. Fitted on every batch of a train loader and
scored on every batch of a test loader, each batch's first two entries taken as inputs (flattened, one row a sample)
and targets."""

import torch
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from lightning_runs.errors import UsageError

MODELS = {
    "classification": {
        "svc": lambda: SVC(C=10),
        "logistic_regression": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
    },
    "regression": {"ridge": lambda: make_pipeline(StandardScaler(), Ridge())},
}
REGRESSION_SCORES = {"mse": mean_squared_error, "mae": mean_absolute_error, "r2": r2_score}
# Samples of a split: SVC's fit grows with their square or worse (2,000 of 64 values: 0.13 s here, 20,000 ~12 s).
MAX_SAMPLES = 20_000


def baselines(task: str, train_loader, test_loader) -> dict[str, float]:
    (train_x, train_y), (test_x, test_y) = _arrays(train_loader), _arrays(test_loader)
    scores = {}
    for name, make in MODELS[task].items():
        if task == "classification":
            scores[f"{name}_acc"] = make().fit(train_x, train_y).score(test_x, test_y)
            continue
        predicted = make().fit(train_x, train_y.reshape(len(train_y), -1).squeeze(-1)).predict(test_x)
        scores |= {
            f"{name}_{score}": float(f(test_y.reshape(len(test_y), -1), predicted))
            for score, f in REGRESSION_SCORES.items()
        }
    return scores


def _arrays(loader):
    inputs, targets = [], []
    for batch in loader:
        pair = isinstance(batch, tuple | list) and len(batch) >= 2
        if not pair or not all(isinstance(t, torch.Tensor) for t in batch[:2]):
            raise UsageError("--baselines: the batches are not (inputs, targets, ...) tensors; leave baselines out")
        inputs.append(batch[0].detach().cpu().flatten(1).float())
        targets.append(batch[1].detach().cpu())
        if sum(map(len, inputs)) > MAX_SAMPLES:
            raise UsageError(f"--baselines: more than {MAX_SAMPLES:,} samples a split, more than SVC fits in time")
    return torch.cat(inputs).numpy(), torch.cat(targets).numpy()
