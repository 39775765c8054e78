"""`python -m <package> cv --folds K`: K-fold cross-validation of a recipe (the configs and options `fit` takes).

Each fold is an ordinary `python -m <package> fit` process with `--data.folds K --data.fold k`, a run of its own in
runs/<name>/cv-<study>/fold_k; the DataModule declares both arguments and validates on fold k of its samples outside
the test split (the template's stratify by label, lightning_runs.data.fold_indices). The table at the end gives each
fold's best monitored score (the best checkpoint's), their mean and sample standard deviation, and with `--test` the
test split's scores of each fold's best checkpoint; runs/<name>/cv-<study>/cv.json keeps it. Running the same command
again continues: finished folds are kept, a stopped fold resumes from its last checkpoint.
"""

from collections.abc import Callable
from pathlib import Path

from jsonargparse.typing import PositiveInt

from lightning_runs.configs import recipe as recipe_of
from lightning_runs.console import say
from lightning_runs.errors import Failed, Stopped, UsageError
from lightning_runs.run_folders import get, read_run_data, read_summary, write_json
from lightning_runs.tools.fits import Fits, check_study, fit_config, same_recipe, table
from lightning_runs.tools.function_cli import function_cli


def cv(
    cli_main: Callable,
    folds: int,
    study: str = "cv",
    configs: tuple[str, ...] = (),
    args: tuple[str, ...] = (),
    test: bool = False,
    workers: PositiveInt = 1,
    threads: PositiveInt | None = None,
    launcher: tuple[str, ...] = (),
) -> dict:
    """Fit the recipe on each of `folds` folds and give the folds' scores, mean and standard deviation.

    Args:
        cli_main: the project's CLI; each fold runs it as `python -m <its package> fit`
        folds: how many folds (at least 2): each validates on one, trains on the others
        study: this cross-validation's name, its folder runs/<name>/cv-<study>
        configs: the configs every fold stacks, in this order (none: the CLI's defaults)
        args: options of `fit` for every fold, such as [--model.lr=0.01]; any option not cv's goes here too
        test: also test each fold's best checkpoint on the test split
        workers: folds run at once (each a process of its own; its output then goes to fold_k.log)
        threads: OMP_NUM_THREADS of each fold, so that folds sharing a machine do not oversubscribe its cores
            (default: this environment's)
        launcher: the command each fold's `python -m <package> fit ...` is started behind, such as
            [torchrun, --standalone, --nproc_per_node=2, --no-python] (default: none, one process)
    """
    recipe = (*(f"--config={config}" for config in configs), *args)
    resolved = fit_config(cli_main, recipe)
    check_study(study, folds, resolved)
    monitor = get(resolved, "best_checkpoint", "init_args", "monitor")
    if not monitor:
        raise UsageError("the folds' best checkpoint monitors no metric (--best_checkpoint.monitor): cv scores by it")
    save_dir = Path(resolved["trainer"]["logger"]["init_args"]["save_dir"]) / resolved["name"]
    root = save_dir / f"cv-{study}"
    runs = [root / f"fold_{k}" for k in range(folds)]
    record = root / "study.json"  # until a fold has begun: a study whose every fold was refused begins again
    begun = record.exists() and any((run / "summary.json").exists() for run in runs)
    began = read_run_data(record, fix=f"move {root} away to start the study afresh") if begun else None
    kept = same_recipe(began, folds, recipe_of(resolved), root)
    todo = {k: c for k in range(folds) if (c := _command(k, folds, recipe, study, save_dir, runs[k], test)) is not None}
    say(f"cv {study}: {folds} folds of {resolved['name']} in {root}; {folds - len(todo)} finished, {len(todo)} to run")
    root.mkdir(parents=True, exist_ok=True)
    write_json(record, kept)
    fits, order = Fits(cli_main, launcher, threads), list(todo)
    logs = [root / f"fold_{k}.log" for k in todo] if workers > 1 else None
    for k, command in todo.items():
        say(f"fold {k}: {fits.shown(command)}" + (f" > {root / f'fold_{k}.log'}" if logs else ""))

    def ended(i: int, code: int) -> None:
        if logs:
            say(f"fold {order[i]}: exit {code}")
        if code == 2:  # refused (its line is above): so would every fold be
            raise UsageError(f"fold {order[i]} was refused (its error is above); fix that and run the same command")

    codes, signum = fits.run([todo[k] for k in order], workers, logs, ended)
    if signum is not None:
        raise Stopped(signum, "Interrupted: run the same command again; finished folds are kept, a stopped one resumes")
    result = _table(runs, monitor, test)
    write_json(root / "cv.json", result)
    failed = [k for k, code in zip(order, codes, strict=True) if code != 0]
    if failed:
        raise Failed(
            f"folds {', '.join(map(str, failed))} failed (their errors are above); the same command reruns them"
        )
    return result


def _command(k, folds, recipe, study, save_dir, run, test) -> list[str] | None:
    """The fold's next command: its fit (from step 0 or its last checkpoint), its test, or None once done."""
    summary = _summary(run)
    if summary.get("status") == "completed":
        if not test or any(key.startswith("test") for key in summary.get("metrics", {})):
            return None
        return ["test", f"--ckpt_path={run / 'checkpoints/best.ckpt'}"]
    logger = "--trainer.logger.init_args"
    place = [f"--name=cv-{study}", f"{logger}.save_dir={save_dir}", f"{logger}.version={run.name}"]
    fold = [f"--data.folds={folds}", f"--data.fold={k}", *(["--test_best=true"] if test else [])]
    return ["fit", *recipe, *fold, *place, "--ckpt_path=last"]


def _summary(run: Path) -> dict:
    try:
        return read_summary(run / "summary.json")
    except (OSError, ValueError):  # no fit yet, or one stopped before it wrote its summary
        return {}


def _table(runs: list[Path], monitor: str, test: bool) -> dict:
    """Each fold's best score and test scores, printed as a table; their mean and standard deviation."""
    rows = []
    for k, run in enumerate(runs):
        summary = _summary(run)
        tests = {key: value for key, value in summary.get("metrics", {}).items() if test and key.startswith("test")}
        score = (summary.get("best_checkpoint") or {}).get("score")
        rows.append({"fold": k, "run": str(run), "status": summary.get("status"), monitor: score, **tests})
    tests = sorted({key for row in rows for key in row} - {"fold", "run", "status", monitor})
    summary = table(rows, ["fold", monitor, *tests, "run"], ("mean", "std"))
    print(f"std: the folds' spread (sample standard deviation over {len(rows)} folds)")
    return {"monitor": monitor, "folds": rows, "summary": summary}


def main(cli_main: Callable, args: list[str] | None = None) -> dict:
    return function_cli(cv, args, cli_main=cli_main)
