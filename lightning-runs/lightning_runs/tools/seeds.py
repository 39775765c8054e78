"""`python -m <package> seeds`: each seed trained and its best checkpoint tested, beside scikit-learn where it applies.

Each seed sets the initialisation (`--seed_everything`) and, where the chosen DataModule takes a `seed` (or the
parameter `--data_seed` names, such as `split_seed`), its split (`--data.seed`); the JSON's `split_seed` says which
option varied the split, null where none did, and a line says so before any training where the default `seed` is not
taken. Which DataModule is chosen, and so whether it takes one, is known only once the configs and options are parsed:
`fit --print_config` parses them as the fits will (refusing a bad one in one line, before any training) and prints the
resolved config, whose `data.init_args` are that DataModule's parameters.
The score is the test counterpart of the metric the best checkpoint monitors (`val/f1` -> `test/f1`), with, beside each
baseline's, the model's own test score of the same name where it logs one (`test_acc` beside `svc_acc`). A run that
monitors nothing (its model logs no validation metric) tests its best.ckpt, the newest, and reports every test metric
it logs; with none, the table says there is no score to spread.

Beside them, scikit-learn baselines (tools/baselines.py), fitted on the batches of the same train loader and
scored on the same test loader, by the task the targets show: a classification's SVC and logistic regression
accuracy, a regression's ridge MSE, MAE and R^2; where none apply, the table says why.
"""

import contextlib
import io
import os
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import yaml

from lightning_runs import errors
from lightning_runs.checkpoints.callbacks import BestCheckpoint
from lightning_runs.checks.preflight import SEED_RANGE
from lightning_runs.contract.names import SEPARATORS, counterpart, stage_of
from lightning_runs.contract.parts import monitored_checkpoint
from lightning_runs.errors import Failed, UsageError
from lightning_runs.folders.layout import RUNS, write_json
from lightning_runs.tools.baselines import baselines, is_baseline, measure
from lightning_runs.tools.function_cli import function_cli


def evaluate_seeds(
    cli_main: Callable,
    configs: list[Path] = [],  # noqa: B006 - jsonargparse reads this default; none: the CLI's defaults
    seeds: list[int] = [0, 1, 2, 3, 4],  # noqa: B006
    args: list[str] = [],  # noqa: B006 - extra `python -m <package> fit` options, e.g. ["--trainer.max_epochs=5"]
    name: str = "seeds",
    output: Path | None = None,
    data_seed: str | None = "seed",
) -> dict:
    """Trains and tests `configs` once per seed; prints a table and writes it as JSON (default runs/<name>.json).

    Args:
        configs: the configs each fit stacks, in this order (none: the CLI's defaults)
        seeds: the seeds, one fit and one test each: the initialisation (--seed_everything) and the split
        args: more `fit` options for every seed, such as [--trainer.max_epochs=5]
        name: the runs' folder name, runs/<name>/version_N, and the table's default file name
        output: the JSON file of the table (default: runs/<name>.json)
        data_seed: the DataModule's parameter that seeds its split, set to each seed, such as split_seed (default
            seed, skipped with a line where the DataModule takes none; null: the split stays the config's)
    """
    output = output or Path(RUNS) / f"{name}.json"
    _check(configs, seeds, output)
    stacked = [option for path in configs for option in ("--config", str(path))]
    quiet = ["--quiet"]  # ten runs: keep the output to their test tables and the final table
    # Each run gets its options as `args` while sys.argv holds this command's: intended here, not a mistake.
    warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
    split_seed = _split_seed(data_seed, _data_parameters(cli_main, [*stacked, *quiet, *args]))
    rows = []
    for seed in seeds:
        seeded = [*stacked, *quiet, *args, f"--seed_everything={seed}"]
        seeded += [f"--{split_seed}={seed}"] if split_seed else []
        seeded.append(f"--trainer.logger.init_args.name={name}")
        started = time.perf_counter()
        fit = cli_main(["fit", *seeded])
        seconds = time.perf_counter() - started
        best = _best_checkpoint(fit.trainer)
        if best is None:
            raise Failed(f"seed {seed}: the fit saved no best checkpoint (--checkpoint) to test")
        test = cli_main(["test", *seeded, f"--ckpt_path={best.best_model_path}"])
        scores = baselines(fit.datamodule.train_dataloader(), test.datamodule.test_dataloader())
        row = {"seed": seed, **_model_scores(seed, best.monitor, test.trainer.callback_metrics, scores)}
        if best.monitor:
            row[_column(f"best_{best.monitor}")] = best.best_model_score.item()
        row.update(epochs=fit.trainer.current_epoch, fit_seconds=round(seconds, 1), checkpoint=best.best_model_path)
        row.update(scores if isinstance(scores, dict) else {"baselines": f"none: {scores}"})
        rows.append(row)
    result = {"configs": [str(p) for p in configs], "args": args, "split_seed": split_seed}
    result.update(seeds=rows, summary=_summary(rows))
    _print(result)
    write_json(output, result)
    return result


def _check(configs: list[Path], seeds: list[int], output: Path) -> None:
    """What the options themselves can say is wrong, before any parsing or training."""
    for path in configs:
        if not path.is_file():
            raise UsageError(f"--configs {path}: {'a folder' if path.is_dir() else 'no such file'}; give a config file")
    if not seeds:
        raise UsageError("--seeds []: give at least one seed")
    low, high = SEED_RANGE
    bad = next((seed for seed in seeds if not low <= seed <= high), None)
    if bad is not None:  # the first fit refused it, naming its --data.seed
        raise UsageError(f"--seeds: {bad} is not a seed; each must be in {low}..{high}")
    if len(set(seeds)) < len(seeds):
        twice = next(seed for seed in seeds if seeds.count(seed) > 1)
        raise UsageError(f"--seeds: {twice} given twice, which trains the same run twice; give each seed once")
    if output.is_dir():
        raise UsageError(f"--output {output}: a folder; give a file name, such as {output / 'seeds.json'}")
    # The table is written after every seed trained: a folder it cannot go in was a traceback at the very end.
    existing = next(folder for folder in output.parents if folder.exists())  # `.` or `/` at last
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        why = "a file" if not existing.is_dir() else "not writable by you"
        raise UsageError(f"--output {output}: {existing} is {why}; give a file in a folder you can write")


def _split_seed(data_seed: str | None, parameters: dict) -> str | None:
    """The option each seed sets the split with: `data.<data_seed>` where the DataModule takes it. The default
    (`seed`) is skipped where it does not, said in one line; a name given is refused in one line, before any
    training."""
    if data_seed is None or data_seed in parameters:
        return data_seed and f"data.{data_seed}"
    taken = ", ".join(parameters) or "none"
    if data_seed != "seed":
        raise UsageError(f"--data_seed {data_seed}: the DataModule takes no such parameter (it takes: {taken})")
    seeded = [name for name in parameters if "seed" in name]  # named as one, only suggested: it may seed another thing
    named = f"--data_seed {seeded[0]} if that seeds it" if len(seeded) == 1 else "--data_seed <the one that seeds it>"
    print(
        f"Note: the DataModule takes no `seed` (--data_seed's default), so every seed keeps the config's split (it"
        f" takes: {taken}); give {named}, or --data_seed null to keep it so",
        flush=True,
    )
    return None


def _best_checkpoint(trainer):
    """The checkpoint callback of the run's best.ckpt, once it saved one: chosen by the metric it monitors, or, where
    the run monitors none (its model logs no validation metric), the newest."""
    best = monitored_checkpoint(trainer) or next((c for c in trainer.callbacks if isinstance(c, BestCheckpoint)), None)
    return best if best is not None and best.best_model_path else None


def _model_scores(seed: int, monitor: str | None, logged: dict, baseline_scores: dict | str) -> dict[str, float]:
    """The model's test scores: the counterpart of the metric its best checkpoint monitored, and beside each
    baseline's the model's own of the same name (`test_acc` beside `svc_acc`) where it logs one; every test metric it
    logged where nothing was monitored."""
    tested = {name: value.item() for name, value in sorted(logged.items()) if stage_of(name) == "test"}
    if monitor is None:
        return {_column(name): value for name, value in tested.items()}
    score = counterpart(monitor, "test")
    if score not in tested:
        raise Failed(f"seed {seed}: the test logged no {score}, the test counterpart of {monitor}")
    measures = dict.fromkeys(measure(column) for column in baseline_scores) if isinstance(baseline_scores, dict) else {}
    beside = [f"test{separator}{kind}" for kind in measures for separator in SEPARATORS]
    return {_column(score): tested[score], **{_column(name): tested[name] for name in beside if name in tested}}


def _data_parameters(cli_main: Callable, options: list[str]) -> dict:
    """The parameters of the DataModule the options choose, from the config `fit --print_config` resolves (it exits
    before anything is built). A bad config or option is refused here, as the fit would."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            cli_main(["fit", *options, "--print_config"])
    except SystemExit as exit:
        if exit.code not in (0, None):
            raise
    data = (yaml.safe_load(printed.getvalue()) or {}).get("data") or {}
    # A LightningCLI that chooses its DataModule by class path lists its parameters under init_args (none where the
    # class takes none), one that takes a fixed class lists them directly.
    parameters = (data.get("init_args") or {} if "class_path" in data else data) if isinstance(data, dict) else {}
    return parameters if isinstance(parameters, dict) else {}


def _column(metric: str) -> str:
    return metric.replace("/", "_")  # test/f1 -> test_f1, a JSON key and a column name


def _summary(rows: list[dict]) -> dict[str, dict[str, float]]:
    columns = [column for column in [*_scores(rows[0]), "fit_seconds"] if all(column in row for row in rows)]
    return {
        column: {
            "mean": statistics.mean(values := [row[column] for row in rows]),
            "median": statistics.median(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        }
        for column in columns
    }


def _scores(row: dict) -> list[str]:
    """The score columns: the test score, the baselines' on the same split, the best checkpoint's."""
    return (
        [key for key in row if key.startswith("test_")]
        + [key for key in row if is_baseline(key)]
        + [key for key in row if key.startswith("best_")]
    )


def _print(result: dict) -> None:
    first = result["seeds"][0]
    scores = _scores(first)
    columns = [*scores, "epochs", "fit_seconds"]
    print("\n" + " | ".join(["seed", *columns]))
    for row in result["seeds"]:
        cells = (f"{row[c]:.4f}" if c in scores else str(row[c]) for c in columns if c in row)
        print(" | ".join([str(row["seed"]), *cells]))
    for stat in ("mean", "median", "std"):
        values = [result["summary"][c][stat] if c in result["summary"] else None for c in columns]
        print(" | ".join([stat, *("" if v is None else f"{v:.4f}" for v in values)]))
    if not any(column.startswith("test_") for column in scores):
        print("the model's test logged no metric: the table has no score of it to spread")
    if "baselines" in first:
        print(f"baselines: {first['baselines']}")


def main(cli_main: Callable, args: list[str] | None = None) -> dict:
    return errors.main(lambda: function_cli(evaluate_seeds, args, cli_main=cli_main))
