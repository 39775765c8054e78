"""`python -m <package> sweep --config <study>.yaml`: an Optuna search over ranges declared in a YAML file.

Each trial is an ordinary `python -m <package> fit` process (behind `--launcher`, if given, so a trial may use several
devices as `fit` does), a run of the study's name in the sweep's folder, runs/sweeps/<study>/version_N, with the
sampled values as command-line overrides. The study lives in Optuna's storage: by default a journal file,
runs/sweeps/<study>.journal, which the workers of one machine share (a study begun in runs/sweeps/<study>.db, SQLite,
continues there), or a database server (`--storage postgresql://...`) for workers on many machines. Running the same
command again, or N times at once, works on the same study: each worker takes the next trial, a trial whose worker died
is failed and retried with its values, and the workers stop together once the study holds `n_trials` finished trials.
TPE samples; trials whose validation metric trails the median of earlier trials are pruned. A worker whose every trial
failed exits 1. A trial is scored by `--metric`, else by what the trials' best checkpoint monitors
(`--best_checkpoint.monitor`); its direction is `--direction`, else that checkpoint's mode, for that metric only. A
study keeps the metric and direction it began with; a model that does not log the metric in validation stops the worker
at its first trial, in one line (exit 2): no other trial would do better.
"""

import re
import signal
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import optuna
from jsonargparse.typing import NonNegativeInt, PositiveInt
from optuna.trial import TrialState

from lightning_runs import errors
from lightning_runs.configs import recipe as recipe_of
from lightning_runs.errors import Failed, Stopped, UsageError
from lightning_runs.sweeps import storage as studies
from lightning_runs.sweeps.objective import TrialFits
from lightning_runs.sweeps.space import corners, search_space
from lightning_runs.sweeps.trial import STORAGE
from lightning_runs.sweeps.turns import Turn
from lightning_runs.tools.fits import Fits, check_study, fit_config, same_recipe
from lightning_runs.tools.function_cli import function_cli

STUDY_RECIPE = "recipe"  # the study's user attribute holding the recipe it began with
Direction = Literal["maximize", "minimize"]  # a study's


def sweep(
    cli_main: Callable,
    study: str,
    space: dict[str, Any],
    n_trials: PositiveInt = 20,
    configs: tuple[str, ...] = (),
    args: tuple[str, ...] = (),
    metric: str | None = None,
    direction: Direction | None = None,
    pruning_startup_trials: NonNegativeInt = 5,
    pruning_warmup_epochs: NonNegativeInt = 3,
    seed: int = 0,
    save_dir: str = "runs/sweeps",
    storage: str | None = None,
    launcher: tuple[str, ...] = (),
    threads: PositiveInt | None = None,
    heartbeat_interval: PositiveInt = 10,
    grace_period: PositiveInt = 30,
    folds: int | None = None,
) -> optuna.Study:
    """Run trials until the study holds `n_trials` finished ones (complete or pruned; failed ones are retried).

    Args:
        cli_main: the project's CLI, `cli_main(args, callbacks)`; each trial runs it as `python -m <its package> fit`
        study: the study's name, which is also its file's and its trials' run name
        space: option of `python -m <package> fit` (such as `model.lr`) -> the values to sample it from: a range
            `{low, high}` (`log: true` for a log-uniform one; integers when both ends are) or `{choices: [...]}`
        n_trials: finished trials the study should hold; a failed trial, or one cut short by Ctrl-C, does not count
        configs: the configs every trial stacks, in this order (none: the CLI's defaults)
        args: fixed options for every trial, before the sampled ones
        metric: what a trial is scored by, its best value over the epochs (default: the metric the trials' best
            checkpoint monitors); a study keeps the metric it began with
        direction: whether a higher or a lower `metric` is better (default: the best checkpoint's mode, for the
            metric it monitors only); a study keeps the one it began with
        pruning_startup_trials: trials that always run to the end, to learn what a median epoch looks like
        pruning_warmup_epochs: epochs of every trial that are never pruned
        seed: the sampler's seed, offset by each trial's number (workers sharing a study sample different values)
        save_dir: the folder of studies: <save_dir>/<study>.journal and the trials' runs in <save_dir>/<study>/
        storage: the study's storage: a database URL, such as postgresql://user:password@host/database (psycopg 3,
            the `postgres` extra) for workers on many machines, or a journal file's path (default:
            <save_dir>/<study>.journal for workers on one machine; <save_dir>/<study>.db, SQLite, where a study
            began there)
        launcher: the command each trial's `python -m <package> fit ...` is started behind, such as
            [torchrun, --standalone, --nproc_per_node=2, --no-python] (default: none, one process)
        threads: OMP_NUM_THREADS of each trial, so that workers sharing a machine do not oversubscribe its cores
            (default: this worker's environment's)
        heartbeat_interval: seconds between a worker's signs of life for its running trial (a database's heartbeat)
        grace_period: seconds without one after which another worker fails that trial and retries its values (on a
            journal file, another worker of the machine sees at once that a worker's process is gone)
        folds: score each trial by K-fold cross-validation (at least 2): its value is the mean of its folds' best
            `metric`, each fold a fit of its own (`--data.folds K --data.fold k`, as `cv` runs them); a trial is
            pruned on any fold that trails the other trials' same fold
    """
    if grace_period <= heartbeat_interval:
        raise UsageError(f"--grace_period {grace_period}: must exceed --heartbeat_interval {heartbeat_interval}")
    space = search_space(space)  # each option's Optuna distribution
    # Parsed as every trial's fit will be, at each end of each range and each choice: a misspelt option or a value the
    # fit refuses (a smoothing of 5, a batch size of "abc") is refused before any trial.
    recipe = tuple(f"--config={config}" for config in configs)
    # The first: the trials' config, their best checkpoint with it.
    resolved, *_ = [fit_config(cli_main, (*recipe, *args, *corner)) for corner in corners(space)]
    check_study(study, folds, resolved)  # a file and a run name in save_dir; folds the DataModule takes
    metric, direction = scored_by(resolved, metric, direction)
    Path(save_dir).mkdir(parents=True, exist_ok=True)
    url = _url(storage, Path(save_dir), study)
    shown = re.sub(r"(://[^/@:]*:)[^/@]*@", r"\1***@", url.removeprefix("sqlite:///"))  # a file's path, no password
    if url.startswith("sqlite"):
        print(f"Note: {shown} is SQLite, which Optuna advises against for several workers at once", file=sys.stderr)
    with studies.storage_errors(url, shown):
        turn = Turn(url, study, save_dir)
        optuna_study = studies.open_study(url, study, direction, turn, heartbeat_interval, grace_period)
    studies.keep_scoring(optuna_study, metric, direction, shown)  # before any trial: a study scores one way
    finished = studies.counts(optuna_study)[0]
    # The recipe the trials vary (the searched settings left out), kept from the study's first finished trial on.
    varied = {k: v for k, v in recipe_of(resolved).items() if k not in space}
    began = optuna_study.user_attrs.get(STUDY_RECIPE) if finished else None
    optuna_study.set_user_attr(STUDY_RECIPE, same_recipe(began, folds, varied, f"the study in {shown}"))
    print(f"Study {study!r} in {shown}: {finished} of {n_trials} trials finished", flush=True)
    pruner = {"n_startup_trials": pruning_startup_trials, "n_warmup_steps": pruning_warmup_epochs}
    reporting = {"metric": metric, "pruner": pruner}
    fits = Fits(cli_main, launcher, threads)
    fits.env[STORAGE] = url  # the trials' ReportToTrial opens it
    # The same network every trial: its summary table once per trial is noise (args may turn it back on).
    fixed = [*recipe, "--trainer.enable_model_summary=false", *args]
    objective = TrialFits(optuna_study, space, fits, fixed, save_dir, reporting, seed, folds)
    previous = signal.signal(signal.SIGTERM, objective.stop)  # Ctrl-C raises KeyboardInterrupt by itself
    try:
        journal_grace = grace_period if "://" not in url else None  # a journal has no heartbeat: workers.py
        studies.work(optuna_study, objective, n_trials, turn, heartbeat_interval, journal_grace, objective.after_trial)
    except KeyboardInterrupt:
        signum = objective.stopped[0] if objective.stopped else signal.SIGINT
        raise Stopped(signum, "Interrupted: run the same command again to continue the study.") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    ran = [t for t in optuna_study.trials if t.number in objective.mine]
    if ran and all(trial.state == TrialState.FAIL for trial in ran):
        raise Failed(
            f"all {len(ran)} trials failed (their errors are above); once fixed, the same command retries them"
        )
    return optuna_study


def scored_by(resolved: dict, metric: str | None, direction: Direction | None) -> tuple[str, Direction]:
    """The metric and direction given, or else the monitor and mode of the trials' best checkpoint in their resolved
    config (`fit --print_config`); a direction is never guessed for another metric."""
    best = (resolved.get("best_checkpoint") or {}).get("init_args") or {}
    monitor, mode = best.get("monitor"), best.get("mode")
    metric = metric or monitor
    if metric is None:
        raise UsageError("the trials' best checkpoint monitors no metric (--best_checkpoint.monitor): give --metric")
    if direction is None and metric != monitor:
        watched = f"{monitor} ({mode})" if monitor else "no metric"
        raise UsageError(
            f"--metric {metric}: give --direction maximize or minimize; a direction is taken only for the metric the"
            f" trials' best checkpoint monitors, and that is {watched}"
        )
    return metric, direction or ("maximize" if mode == "max" else "minimize")  # min: Lightning's default mode


def _url(storage: str | None, save_dir: Path, study: str) -> str:
    """The storage as every worker and trial opens it: a journal file by its absolute path, or a database URL as
    given (SQLAlchemy 2.1 reads `postgresql://` as psycopg 3, the driver the `postgres` extra installs)."""
    if storage is None:  # the journal file, or the SQLite file of a study begun there (it continues there)
        database, journal = save_dir / f"{study}.db", save_dir / f"{study}.journal"
        storage = f"sqlite:///{database.resolve()}" if database.is_file() and not journal.exists() else str(journal)
    return storage if "://" in storage else str(Path(storage).resolve())


def main(cli_main: Callable, args: list[str] | None = None) -> optuna.Study:
    with warnings.catch_warnings():  # Optuna calls the heartbeat experimental: nothing a user can act on
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return errors.main(lambda: function_cli(sweep, args, cli_main=cli_main))
