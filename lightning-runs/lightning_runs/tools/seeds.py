"""`python -m <package> seeds`: each seed trained and its best checkpoint tested, beside scikit-learn.

Each seed sets both the split (`--data.seed`) and the initialisation (`--seed_everything`). The score is the test
counterpart of the metric the best checkpoint monitors (`val/f1` -> `test/f1`). The baselines are fitted on the
batches of the same train loader (its dropped ragged batch aside) and scored on the same test loader, flattened:
the DataModule's batches must start with (inputs, labels).
"""

import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from lightning_runs.contract import counterpart, monitored_checkpoint
from lightning_runs.runs import write_json
from lightning_runs.tools import function_cli

BASELINES = {
    "svc": lambda: SVC(C=10),
    "logistic_regression": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
}


def evaluate_seeds(
    cli_main: Callable,
    configs: list[Path] = [],  # noqa: B006 - jsonargparse reads this default; none: the CLI's defaults
    seeds: list[int] = [0, 1, 2, 3, 4],  # noqa: B006
    args: list[str] = [],  # noqa: B006 - extra `python -m <package> fit` options, e.g. ["--trainer.max_epochs=5"]
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
        best = monitored_checkpoint(fit.trainer)
        test = cli_main(["test", *seeded, f"--ckpt_path={best.best_model_path}"])
        score = counterpart(best.monitor, "test")
        row = {
            "seed": seed,
            _column(score): test.trainer.callback_metrics[score].item(),
            _column(f"best_{best.monitor}"): best.best_model_score.item(),
            "epochs": fit.trainer.current_epoch,
            "fit_seconds": round(seconds, 1),
            "checkpoint": best.best_model_path,
        }
        row.update(_baselines(fit.datamodule, test.datamodule))
        rows.append(row)
    result = {"configs": [str(p) for p in configs], "args": args, "seeds": rows, "summary": _summary(rows)}
    _print(result)
    write_json(output or Path("runs") / f"{name}.json", result)
    return result


def _column(metric: str) -> str:
    return metric.replace("/", "_")  # test/f1 -> test_f1, a JSON key and a column name


def _baselines(fitted, tested) -> dict[str, float]:
    train_x, train_y = _arrays(fitted.train_dataloader())
    test_x, test_y = _arrays(tested.test_dataloader())
    return {f"{name}_acc": make().fit(train_x, train_y).score(test_x, test_y) for name, make in BASELINES.items()}


def _arrays(loader):
    """Every batch's inputs, flattened to one row per sample, and labels, as NumPy arrays."""
    batches = list(loader)
    inputs = torch.cat([batch[0].detach().cpu().flatten(1) for batch in batches])
    return inputs.numpy(), torch.cat([batch[1].detach().cpu() for batch in batches]).numpy()


def _summary(rows: list[dict]) -> dict[str, dict[str, float]]:
    return {
        column: {
            "mean": statistics.mean(values := [row[column] for row in rows]),
            "median": statistics.median(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        }
        for column in [*_scores(rows[0]), "fit_seconds"]
    }


def _scores(row: dict) -> list[str]:
    """The score columns: the test score, the baselines' on the same split, the best checkpoint's."""
    return (
        [key for key in row if key.startswith("test_")]
        + [f"{name}_acc" for name in BASELINES]
        + [key for key in row if key.startswith("best_")]
    )


def _print(result: dict) -> None:
    scores = _scores(result["seeds"][0])
    columns = [*scores, "epochs", "fit_seconds"]
    print("\n" + " | ".join(["seed", *columns]))
    for row in result["seeds"]:
        print(" | ".join([str(row["seed"]), *(f"{row[c]:.4f}" if c in scores else str(row[c]) for c in columns)]))
    for stat in ("mean", "median", "std"):
        values = [result["summary"][c][stat] if c in result["summary"] else None for c in columns]
        print(" | ".join([stat, *("" if v is None else f"{v:.4f}" for v in values)]))


def main(cli_main: Callable, args: list[str] | None = None) -> dict:
    return function_cli(evaluate_seeds, args, cli_main=cli_main)
