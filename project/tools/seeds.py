"""`python -m project.tools.seeds`: each seed trained and its best checkpoint tested, beside scikit-learn.

Each seed sets both the split (`--data.seed`) and the initialisation (`--seed_everything`); the baselines are
fitted on exactly the same train splits and scored on the same test splits.
"""

import statistics
import time
import warnings
from pathlib import Path

from jsonargparse import auto_cli
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from project.cli import cli_main
from project.core.runs import write_json

BASELINES = {
    "svc": lambda: SVC(C=10),
    "logistic_regression": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
}


def evaluate_seeds(
    configs: list[Path] = [Path("configs/digits.yaml")],  # noqa: B006 - jsonargparse reads this default
    seeds: list[int] = [0, 1, 2, 3, 4],  # noqa: B006
    args: list[str] = [],  # noqa: B006 - extra `python -m project fit` options, e.g. ["--trainer.max_epochs=5"]
    name: str = "seeds",
    output: Path | None = None,
) -> dict:
    """Trains and tests `configs` once per seed; prints a table and writes it as JSON (default runs/<name>.json)."""
    stacked = [option for path in configs for option in ("--config", str(path))]
    quiet = ["--quiet"]  # ten runs: keep the output to their test tables and the final table
    # Each run gets its options as `args` while sys.argv holds this command's: intended here, not a mistake.
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
    rows = []
    for seed in seeds:
        seeded = [*stacked, *quiet, *args, f"--seed_everything={seed}", f"--data.seed={seed}"]
        seeded.append(f"--trainer.logger.init_args.name={name}")
        started = time.perf_counter()
        fit = cli_main(["fit", *seeded])
        seconds = time.perf_counter() - started
        best = fit.trainer.checkpoint_callback.best_model_path
        test = cli_main(["test", *seeded, f"--ckpt_path={best}"])
        row = {
            "seed": seed,
            "test_acc": test.trainer.callback_metrics["test/acc"].item(),
            "best_val_acc": fit.trainer.checkpoint_callback.best_model_score.item(),
            "epochs": fit.trainer.current_epoch,
            "fit_seconds": round(seconds, 1),
            "checkpoint": best,
        }
        row.update(_baselines(fit.datamodule))
        rows.append(row)
    result = {"configs": [str(p) for p in configs], "args": args, "seeds": rows, "summary": _summary(rows)}
    _print(result)
    write_json(output or Path("runs") / f"{name}.json", result)
    return result


def _baselines(datamodule) -> dict[str, float]:
    (train_x, train_y), (test_x, test_y) = datamodule.splits["train"], datamodule.splits["test"]
    train_x, test_x = train_x.flatten(1).numpy(), test_x.flatten(1).numpy()
    return {
        f"{name}_acc": make().fit(train_x, train_y.numpy()).score(test_x, test_y.numpy())
        for name, make in BASELINES.items()
    }


def _summary(rows: list[dict]) -> dict[str, dict[str, float]]:
    columns = [key for key in rows[0] if key.endswith("_acc")] + ["fit_seconds"]
    return {
        column: {
            "mean": statistics.mean(values := [row[column] for row in rows]),
            "median": statistics.median(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        }
        for column in columns
    }


def _print(result: dict) -> None:
    columns = ["test_acc", "svc_acc", "logistic_regression_acc", "best_val_acc", "epochs", "fit_seconds"]
    print("\n" + " | ".join(["seed", *columns]))
    for row in result["seeds"]:
        print(" | ".join([str(row["seed"]), *(f"{row[c]:.4f}" if "acc" in c else str(row[c]) for c in columns)]))
    for stat in ("mean", "median", "std"):
        values = [result["summary"][c][stat] if c in result["summary"] else None for c in columns]
        print(" | ".join([stat, *("" if v is None else f"{v:.4f}" for v in values)]))


if __name__ == "__main__":
    auto_cli(evaluate_seeds)
