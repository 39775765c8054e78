"""`python -m <package> seeds`: a recipe trained and its best checkpoint tested once per seed, with the spread of every
test metric it logs, beside scikit-learn baselines on the same split where asked (`--baselines classification`).

Each seed sets the initialisation (`--seed_everything`) and, with `--data_seed <parameter>`, the DataModule's split
(`--data.<parameter>`: `seed` by default; null keeps the config's split). Each fit is a run of `--name` (seeds).
"""

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from lightning_runs.errors import UsageError
from lightning_runs.run_folders import RUNS, write_json
from lightning_runs.tools.baselines import baselines as baseline_scores
from lightning_runs.tools.fits import table
from lightning_runs.tools.function_cli import function_cli


def evaluate_seeds(
    cli_main: Callable,
    configs: list[Path] = [],  # noqa: B006 - jsonargparse reads this default; none: the CLI's defaults
    seeds: list[int] = [0, 1, 2, 3, 4],  # noqa: B006
    args: list[str] = [],  # noqa: B006 - more `fit` options, e.g. ["--trainer.max_epochs=5"]
    name: str = "seeds",
    output: Path | None = None,
    data_seed: str | None = "seed",
    baselines: Literal["classification", "regression"] | None = None,
) -> dict:
    """Trains and tests `configs` once per seed; prints a table and writes it as JSON (default runs/<name>.json).

    Args:
        configs: the configs each fit stacks, in order (none: the CLI's defaults)
        seeds: one fit and one test each: the initialisation (--seed_everything) and the split (--data_seed)
        args: more `fit` options for every seed, such as [--trainer.max_epochs=5]; any option not seeds' goes here too
        name: the runs' name, runs/<name>/version_N, and the table's default file name
        output: the JSON file of the table (default runs/<name>.json)
        data_seed: the DataModule's parameter that seeds its split, set to each seed (null: the config's split)
        baselines: scikit-learn baselines fitted on the same train loader and scored on the same test loader: SVC and
            logistic regression accuracy (classification), ridge MSE, MAE and R^2 (regression); none by default
    """
    if not seeds or len(set(seeds)) < len(seeds):
        raise UsageError(f"--seeds {seeds}: give each seed once")
    output = Path(output or Path(RUNS) / f"{name}.json")
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")  # in-process on purpose
    rows = []
    for seed in seeds:
        options = [arg for path in configs for arg in ("--config", str(path))]
        options += ["--quiet", *args, f"--seed_everything={seed}", f"--name={name}", "--test_best=true"]
        options += [f"--data.{data_seed}={seed}"] if data_seed else []
        started = time.perf_counter()
        try:
            fit = cli_main(["fit", *options])
        except UsageError as error:
            if data_seed and f"--data.{data_seed}" in str(error):  # the DataModule takes no such parameter
                raise UsageError(f"{error}; give --data_seed <the parameter that seeds its split>, or null") from None
            raise
        best = fit.trainer.checkpoint_callback
        row: dict = {"seed": seed, **{k.replace("/", "_"): float(v) for k, v in sorted((fit.tested or {}).items())}}
        if best is not None and best.monitor and best.best_model_score is not None:
            row[f"best_{best.monitor.replace('/', '_')}"] = float(best.best_model_score)
        row |= {"epochs": fit.trainer.current_epoch, "fit_seconds": round(time.perf_counter() - started, 1)}
        row["checkpoint"] = best.best_model_path if best is not None else None
        if baselines:
            row |= baseline_scores(baselines, fit.datamodule.train_dataloader(), fit.datamodule.test_dataloader())
        rows.append(row)
    scores = [k for k in rows[0] if k not in ("seed", "checkpoint") and all(k in row for row in rows)]
    print()
    result = {"configs": [str(p) for p in configs], "args": args, "data_seed": data_seed, "seeds": rows}
    result["summary"] = table(rows, ["seed", *scores], ("mean", "median", "std"))
    if not any(k.startswith("test") for k in scores):
        print("the model's test logged no metric (or it has no test_step): the table has no test score to spread")
    write_json(output, result)
    return result


def main(cli_main: Callable, args: list[str] | None = None) -> dict:
    return function_cli(evaluate_seeds, args, cli_main=cli_main)
