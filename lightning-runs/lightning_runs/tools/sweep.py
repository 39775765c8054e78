"""`python -m <package> sweep --config <study>.yaml`: an Optuna search over ranges declared in a YAML file.

Each trial is an ordinary `python -m <package> fit` run, a process of its own (behind `--launcher`, if given, so a
trial may use several devices as `fit` does), in runs/sweeps/<study>/version_N, with the sampled values as
command-line overrides. The study lives in Optuna's storage: by default a journal file, runs/sweeps/<study>.journal,
which the workers of one machine share (a study begun before in runs/sweeps/<study>.db, SQLite, continues there), or
any SQLAlchemy URL (`--storage postgresql+psycopg2://...`) for workers on many machines. Running the same command
again, or N times at once on one machine or many, works on the same study: each worker takes the next trial from the
storage, a trial whose worker died is failed and retried with its values, and the workers stop together once the
study holds `n_trials` finished trials. TPE samples; trials whose validation metric trails the median of earlier
trials are pruned. A worker whose every trial failed exits 1. Unless told otherwise, a trial is scored as its best
checkpoint is chosen: on the metric `--checkpoint.monitor` names, in its `--checkpoint.mode`, as the trials' configs
set them; another `--metric` needs its `--direction`, and a study keeps the metric and direction it began with
(lightning_runs.sweeps.scoring). A trial whose fit cannot be scored so (its model does not log the metric, or its best
checkpoint follows another) stops the worker with that line, exit 2: no other trial would do better.
"""

import contextlib
import io
import logging
import math
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import optuna
import sqlalchemy
import yaml
from jsonargparse.typing import NonNegativeInt, PositiveInt
from optuna.trial import TrialState

from lightning_runs import errors
from lightning_runs.errors import Failed, Stopped, UsageError
from lightning_runs.folders.naming import is_component
from lightning_runs.sweeps import storage as study_storage
from lightning_runs.sweeps import turns
from lightning_runs.sweeps.objective import TrialFits
from lightning_runs.sweeps.scoring import check_study, scoring
from lightning_runs.sweeps.space import corners, search_space
from lightning_runs.tools.function_cli import function_cli


def sweep(
    cli_main: Callable,
    study: str,
    space: dict[str, Any],
    n_trials: PositiveInt = 20,
    configs: tuple[str, ...] = (),
    args: tuple[str, ...] = (),
    metric: str | None = None,
    direction: Literal["maximize", "minimize"] | None = None,
    pruning_startup_trials: NonNegativeInt = 5,
    pruning_warmup_epochs: NonNegativeInt = 3,
    seed: int = 0,
    save_dir: str = "runs/sweeps",
    storage: str | None = None,
    launcher: tuple[str, ...] = (),
    threads: PositiveInt | None = None,
    heartbeat_interval: PositiveInt = 10,
    grace_period: PositiveInt = 30,
) -> optuna.Study:
    """Run trials until the study holds `n_trials` finished ones (complete or pruned; failed ones are retried).

    Args:
        cli_main: the project's CLI, `cli_main(args, callbacks)`; each trial runs it as `python -m <its package> fit`
        study: the study's name, which is also its file and its runs' folder name
        space: option of `python -m <package> fit` (such as `model.lr`) -> the values to sample it from: a range
            `{low, high}` (`log: true` for a log-uniform one; integers when both ends are) or `{choices: [...]}`
        n_trials: finished trials the study should hold; a failed trial, or one cut short by Ctrl-C, does not count
        configs: the configs every trial stacks, in this order (none: the CLI's defaults)
        args: fixed options for every trial, before the sampled ones
        metric: what a trial is scored by: its best value over the epochs (by default the metric the best
            checkpoint monitors); a study keeps the metric it began with
        direction: whether a higher or a lower `metric` is better (by default the best checkpoint's mode, given only
            for the metric it monitors: another metric needs its direction); a study keeps the one it began with
        pruning_startup_trials: trials that always run to the end, to learn what a median epoch looks like
        pruning_warmup_epochs: epochs of every trial that are never pruned
        seed: the sampler's seed, offset by each trial's number (workers sharing a study sample different values)
        save_dir: the folder of studies: <save_dir>/<study>.journal and the trials' runs in <save_dir>/<study>/
        storage: the study's storage: an SQLAlchemy URL, such as postgresql+psycopg2://user:password@host/db for
            workers on many machines, or a journal file's path (default: the journal file <save_dir>/<study>.journal
            for workers on one machine; <save_dir>/<study>.db, SQLite, where a study began there)
        launcher: the command each trial's `python -m <package> fit ...` is started behind, such as
            [torchrun, --standalone, --nproc_per_node=2, --no-python] (default: none, one process)
        threads: OMP_NUM_THREADS of each trial, so that workers sharing a machine do not oversubscribe its cores
            (default: this worker's environment's)
        heartbeat_interval: seconds between a worker's signs of life for its running trial (an RDB's heartbeat)
        grace_period: seconds without one after which another worker fails that trial and retries its values (on a
            journal file, another worker of the machine sees at once that a worker's process is gone)
    """
    if not is_component(study):  # it names a file and a folder in save_dir: never a path that leads out of it
        raise UsageError(f"--study {study!r}: must be one file name (no '/' or control character, not '..' or empty)")
    if grace_period <= heartbeat_interval:
        raise UsageError(
            f"--grace_period {grace_period}: must be longer than --heartbeat_interval {heartbeat_interval}"
        )
    ranges = search_space(space)
    # Parsed as every trial's fit will be, at each end of each range and each choice: a misspelt option or a value the
    # fit refuses (a smoothing of 5, a batch size of "abc") is refused before any trial.
    first, *others = corners(ranges)
    resolved = _resolved(cli_main, configs, (*args, *first))  # the trials' config, their monitor with it
    for corner in others:
        _resolved(cli_main, configs, (*args, *corner))
    scored = scoring(resolved, metric, direction)
    Path(save_dir).mkdir(parents=True, exist_ok=True)
    url = storage or _default_storage(Path(save_dir), study)
    url = url if "://" in url else str(Path(url).resolve())  # a journal file, as the trials' processes open it too
    pruning = {"n_startup_trials": pruning_startup_trials, "n_warmup_steps": pruning_warmup_epochs}
    pruner = optuna.pruners.MedianPruner(**pruning)  # decides in the trials' processes (trial.py), rebuilt there
    shown = _shown(url)
    optuna_study = study_storage.open_study(
        url, study, scored.direction, pruner, save_dir, heartbeat_interval, grace_period, where=shown
    )
    check_study(optuna_study, scored, shown)  # before any trial: a study scores its trials one way
    remaining = n_trials - study_storage.finished(optuna_study)
    print(f"Study {study!r} in {shown}: {n_trials - remaining} of {n_trials} trials finished", flush=True)
    package = cli_main.__module__.partition(".")[0]
    # `python -m <package>`, as the user starts it; a project run as a script (`python train.py`) is started that way.
    python = [sys.executable, "-m", package] if package != "__main__" else [sys.executable, sys.argv[0]]
    objective = TrialFits(
        optuna_study, ranges, python, configs, args, launcher, save_dir, url, scored, pruning, seed, threads
    )
    stopped = objective.stopped

    def stop_between_trials(signum, frame) -> None:  # during a trial, trial.py passes the signal on instead
        stopped.append(signum)
        raise KeyboardInterrupt

    def stop_if_asked(study, finished) -> None:  # Optuna calls it once the trial is stored, complete or not
        if stopped:
            raise KeyboardInterrupt
        if objective.refused:  # the sweep's metric, not the trial's values: every trial would refuse it
            study_storage.discard_if_only(study, objective.mine, url)  # so the corrected command may use its name
            raise UsageError(objective.refused)

    previous = signal.signal(signal.SIGTERM, stop_between_trials)  # Ctrl-C raises KeyboardInterrupt by itself
    handlers = logging.getLogger("optuna").handlers  # Optuna's own, on its library logger
    for handler in handlers:
        handler.addFilter(_no_stop_traceback)
    try:
        journal_grace = grace_period if "://" not in url else None
        turn = turns.Turn(url, study, Path(save_dir))
        study_storage.work(
            optuna_study, objective, n_trials, remaining, heartbeat_interval, journal_grace, turn, stop_if_asked
        )
    except KeyboardInterrupt:
        signum = stopped[0] if stopped else signal.SIGINT
        raise Stopped(signum, "Interrupted: run the same command again to continue the study.") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
        for handler in handlers:
            handler.removeFilter(_no_stop_traceback)
    _summarize(optuna_study)
    ran = [t for t in optuna_study.trials if t.number in objective.mine]
    if ran and all(trial.state == TrialState.FAIL for trial in ran):
        raise Failed(
            f"all {len(ran)} trials failed (their errors are above); once the cause is fixed, the same command"
            " retries them"
        )
    return optuna_study


def _no_stop_traceback(record: logging.LogRecord) -> bool:
    """Optuna logs a trial cut short by SIGTERM or Ctrl-C (a KeyboardInterrupt here) as failed, with a traceback:
    the worker's own line says what happened, and the trial's line that it saved."""
    return not (record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt))


def _default_storage(save_dir: Path, study: str) -> str:
    """The journal file for a new study; the SQLite file for one an earlier version began (it continues there)."""
    database, journal = save_dir / f"{study}.db", save_dir / f"{study}.journal"
    return f"sqlite:///{database.resolve()}" if database.is_file() and not journal.exists() else str(journal)


def _shown(url: str) -> str:
    """The storage as messages name it: a file by its path, a server's URL without its password."""
    if url.startswith("sqlite:///"):
        return url.removeprefix("sqlite:///")
    if "://" in url:
        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    return url


def _resolved(cli_main: Callable, configs: tuple[str, ...], args: tuple[str, ...]) -> dict:
    """The trials' config as the CLI resolves it (`fit --print_config` prints it and exits, before anything is built);
    a bad config or option is refused as the fit would refuse it."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            cli_main(["fit", *(f"--config={config}" for config in configs), *args, "--print_config"])
    except SystemExit as exit:
        if exit.code not in (0, None):  # a bad config or option: its error is already on stderr
            raise
    return yaml.safe_load(printed.getvalue()) or {}


def _summarize(study: optuna.Study) -> None:
    for trial in study.trials:
        value = "" if trial.value is None or math.isnan(trial.value) else f"{trial.value:.4f}"
        run = trial.user_attrs.get("run", "")
        print(f"  trial {trial.number:3d}  {trial.state.name:8s} {value:8s} {run}  {trial.params}")
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if complete:
        print(f"Best: trial {study.best_trial.number}, value {study.best_value:.4f}, {study.best_params}")


def main(cli_main: Callable, args: list[str] | None = None) -> optuna.Study:
    return errors.main(lambda: function_cli(sweep, args, cli_main=cli_main))
