"""`python -m <package> sweep --config sweeps/<study>.yaml`: an Optuna search over ranges declared in a YAML file.

Each trial is an ordinary `python -m <package> fit` run, in runs/sweeps/<study>/version_N, with the sampled values
as command-line overrides. The study is a SQLite file, runs/sweeps/<study>.db, so running the same command again
continues it, retrying failed trials. TPE samples; trials whose validation metric trails the median of earlier
trials are pruned. A sweep whose every trial failed exits 1. Unless told otherwise, a trial is scored as its best
checkpoint is chosen: on the metric `--checkpoint.monitor` names, in its `--checkpoint.mode`, as the trials' configs
set them.
"""

import contextlib
import io
import math
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import optuna
import sqlalchemy.exc
import yaml
from jsonargparse.typing import NonNegativeInt, PositiveInt
from lightning.pytorch.callbacks import Callback
from optuna.trial import TrialState
from optuna_integration import PyTorchLightningPruningCallback

from lightning_runs import errors
from lightning_runs.console import program
from lightning_runs.errors import Diverged, Failed, Stopped, Terminated, UsageError
from lightning_runs.naming import is_component
from lightning_runs.runs import run_folder
from lightning_runs.tools import function_cli


@dataclass
class Range:
    """Sampled from [low, high], evenly or, with `log`, log-uniformly; integers when both ends are integers."""

    low: int | float
    high: int | float
    log: bool = False


@dataclass
class Choice:
    """One of `choices`, for categories and for numbers only some values make sense (batch sizes)."""

    choices: list[str | int | float | bool]


class RecordRun(Callback):
    """Stores the trial's run folder in the study, so that every trial, pruned or failed too, can be looked up."""

    def __init__(self, trial: optuna.Trial) -> None:
        self.trial = trial

    def on_fit_start(self, trainer, pl_module) -> None:
        self.trial.set_user_attr("run", str(run_folder(trainer) or trainer.default_root_dir))


def sweep(
    cli_main: Callable,
    study: str,
    space: dict[str, Range | Choice],
    n_trials: PositiveInt = 20,
    configs: tuple[str, ...] = (),
    args: tuple[str, ...] = (),
    metric: str | None = None,
    direction: Literal["maximize", "minimize"] | None = None,
    pruning_startup_trials: NonNegativeInt = 5,
    pruning_warmup_epochs: NonNegativeInt = 3,
    seed: int = 0,
    save_dir: str = "runs/sweeps",
) -> optuna.Study:
    """Run trials until the study holds `n_trials` finished ones (complete or pruned; failed ones are retried).

    Args:
        cli_main: the project's CLI, `cli_main(args, callbacks)`, which runs each trial
        study: the study's name, which is also its file and its runs' folder name
        space: option of `python -m <package> fit` (such as `model.lr`) -> the values to sample it from
        n_trials: finished trials the study should hold; a failed trial, or one cut short by Ctrl-C, does not count
        configs: the configs every trial stacks, in this order (none: the CLI's defaults)
        args: fixed options for every trial, before the sampled ones
        metric: what a trial is scored by: its best value over the epochs (by default the metric the best
            checkpoint monitors)
        direction: whether a higher or a lower `metric` is better (by default the best checkpoint's mode)
        pruning_startup_trials: trials that always run to the end, to learn what a median epoch looks like
        pruning_warmup_epochs: epochs of every trial that are never pruned
        seed: the sampler's seed (offset by the trials already run, so a resumed study samples new values)
        save_dir: the folder of studies: <save_dir>/<study>.db and the trials' runs in <save_dir>/<study>/
    """
    if not is_component(study):  # it names a file and a folder in save_dir: never a path that leads out of it
        raise UsageError(f"--study {study!r}: must be one file name (no '/', not '..' or empty)")
    if metric is None or direction is None:
        monitor, mode = _monitored(cli_main, configs, args)
        metric = metric or monitor
        direction = direction or ("maximize" if mode == "max" else "minimize")
    Path(save_dir).mkdir(parents=True, exist_ok=True)
    database = Path(save_dir, f"{study}.db")
    storage = f"sqlite:///{database.resolve()}"
    pruner = optuna.pruners.MedianPruner(pruning_startup_trials, pruning_warmup_epochs)
    try:
        optuna_study = optuna.create_study(
            storage=storage, study_name=study, direction=direction, pruner=pruner, load_if_exists=True
        )
    except (sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError) as error:
        reason = str(error.orig if getattr(error, "orig", None) else error).splitlines()[0]
        raise UsageError(
            f"{database}: not a readable study database ({reason}); move it away to start afresh"
        ) from None
    optuna_study.sampler = optuna.samplers.TPESampler(seed=seed + len(optuna_study.trials))
    remaining = n_trials - _finished(optuna_study)
    print(f"Study {study!r} in {storage}: {n_trials - remaining} of {n_trials} trials finished", flush=True)

    def objective(trial: optuna.Trial) -> float:
        overrides = [f"--{key}={_suggest(trial, key, values)}" for key, values in space.items()]
        place = [f"--trainer.logger.init_args.save_dir={save_dir}", f"--trainer.logger.init_args.name={study}"]
        # The same network every trial: its summary table once per trial is noise (args may turn it back on).
        command = ["fit", *(f"--config={config}" for config in configs), "--trainer.enable_model_summary=false"]
        command += [*args, *overrides, *place]
        print(f"Trial {trial.number}: {program()} {shlex.join(command)}", flush=True)
        pruning = PyTorchLightningPruningCallback(trial, monitor=metric)  # trial.report after every validation
        try:
            cli_main(command, callbacks=[pruning, RecordRun(trial)])
        except (Stopped, Terminated, KeyboardInterrupt) as stop:  # SIGTERM or Ctrl-C: the user stops the sweep
            trial.set_user_attr("interrupted", True)
            raise KeyboardInterrupt from stop  # Optuna records the trial as failed, then the sweep stops
        except SystemExit as exit:  # Lightning ends a Ctrl-C it caught itself with sys.exit(1)
            trial.set_user_attr("interrupted", True)
            raise KeyboardInterrupt from exit
        except (UsageError, Diverged) as error:  # this trial's values are bad: the trial fails, the sweep goes on
            print(f"Trial {trial.number} failed: {error}", file=sys.stderr, flush=True)
            return math.nan  # Optuna records a NaN score as failed, without re-printing the error as a traceback
        # Trials are numbered 0, 1, 2, ... within a study: the number is the index.
        values = optuna_study.get_trials(deepcopy=False)[trial.number].intermediate_values.values()
        if not values:
            raise ValueError(f"{metric} was never logged; the sweep's metric must be one the model logs")
        return max(values) if direction == "maximize" else min(values)

    ran_before = len(optuna_study.trials)
    if remaining > 0:
        optuna_study.optimize(objective, n_trials=remaining, catch=(Exception,))
    _summarize(optuna_study)
    ran = optuna_study.trials[ran_before:]
    if ran and all(trial.state == TrialState.FAIL for trial in ran):
        raise Failed(
            f"all {len(ran)} trials failed (their errors are above); once the cause is fixed, the same command"
            " retries them"
        )
    return optuna_study


def _monitored(cli_main: Callable, configs: tuple[str, ...], args: tuple[str, ...]) -> tuple[str, str]:
    """The metric and mode the trials' best checkpoint is chosen by: their config as the CLI resolves it
    (`fit --print_config` prints it and exits, before anything is built)."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            cli_main(["fit", *(f"--config={config}" for config in configs), *args, "--print_config"])
    except SystemExit as exit:
        if exit.code not in (0, None):  # a bad config or option: its error is already on stderr
            raise
    checkpoint = (yaml.safe_load(printed.getvalue()) or {}).get("checkpoint") or {}
    if not checkpoint.get("monitor"):
        raise UsageError("the trials' best checkpoint monitors no metric (--checkpoint.monitor): give --metric")
    return checkpoint["monitor"], checkpoint["mode"]


def _suggest(trial: optuna.Trial, name: str, values: Range | Choice):
    if isinstance(values, Choice):
        return trial.suggest_categorical(name, values.choices)
    if isinstance(values.low, int) and isinstance(values.high, int):
        return trial.suggest_int(name, values.low, values.high, log=values.log)
    return trial.suggest_float(name, values.low, values.high, log=values.log)


def _finished(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))


def _summarize(study: optuna.Study) -> None:
    for trial in study.trials:
        value = "" if trial.value is None or math.isnan(trial.value) else f"{trial.value:.4f}"
        run = trial.user_attrs.get("run", "")
        print(f"  trial {trial.number:3d}  {trial.state.name:8s} {value:8s} {run}  {trial.params}")
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if complete:
        print(f"Best: trial {study.best_trial.number}, value {study.best_value:.4f}, {study.best_params}")


def main(cli_main: Callable, args: list[str] | None = None) -> optuna.Study:
    return errors.main(lambda: _sweep_command(cli_main, args))


def _sweep_command(cli_main: Callable, args: list[str] | None) -> optuna.Study:
    try:
        return function_cli(sweep, args, cli_main=cli_main)
    except KeyboardInterrupt:
        print("Interrupted: run the same command again to continue the study.", file=sys.stderr)
        sys.exit(130)
