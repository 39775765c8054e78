"""A run's files never overwrite each other: every option that names a file in the run folder (each part's `filename`,
found from the parts themselves) is tried against every other, and against the files a real run writes that no option
names (its config, the logger's), made the same path and made a folder of the other; each is refused in one line,
exit 2, before any run folder exists. Distinct names are accepted, and every file a run then holds is one the registry
(cli/placement.py, `run_files`) knows.

A command line of each kind a part's pairs come in goes through the whole CLI; every other case, through the check that
CLI runs before its run folder (placement.check_run_files), on the config the CLI gave it with the case's names put in:
one parse each would be ~0.2 s apiece."""

import copy
import inspect
import itertools
import os
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from lightning.pytorch.callbacks import ModelCheckpoint
from tiny_runs import refusal, run

from lightning_runs.cli import placement
from lightning_runs.cli.parts import PARTS
from lightning_runs.configs import option
from lightning_runs.errors import UsageError, said

SHORT = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=1", "--trainer.limit_val_batches=1"]
# Every part that takes a file's name, by its option, with its default name and whether it is a checkpoint (the path
# is then `checkpoints/<filename>.ckpt`); a new part with a `filename` joins every case below by itself.
NAMED = {
    option(cls.__name__): (
        (PARTS[cls] or {}).get("filename", inspect.signature(cls).parameters["filename"].default),
        issubclass(cls, ModelCheckpoint),
    )
    for cls in PARTS
    if "filename" in inspect.signature(cls).parameters
}


def default_path(key: str) -> str:
    name, checkpoint = NAMED[key]
    return f"checkpoints/{name}.ckpt" if checkpoint else name


def value(key: str, path: str) -> str:
    """The value of `--<key>.filename` that makes its file `path` in the run folder."""
    return os.path.relpath(path.removesuffix(".ckpt"), "checkpoints") if NAMED[key][1] else path


def unnamed_files(finished) -> list[str]:
    """The files a finished fit wrote that no part's option names: its config, the logger's."""
    run_dir = next(finished.glob("*/version_0"))
    written = {str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file()}
    defaults = {default_path(key) for key in NAMED}
    assert {"checkpoints/last.ckpt", "summary.json"} <= written & defaults, written  # the options found the fit's files
    return sorted(written - defaults)


def cases(unnamed: list[str]) -> list:
    """(args, what the line names) for every pair of a named and a named or unnamed file: the same path where both can
    be it (a checkpoint's ends in .ckpt), and each named one inside the other as a folder."""
    found, sources = [], [*NAMED, *unnamed]
    pairs = [pair for pair in itertools.combinations(sources, 2) if pair[0] in NAMED]  # NAMED first: a's is
    for a, b in pairs:
        pair = [a, b]
        named = [s for s in pair if s in NAMED]
        fixed = next((s for s in pair if s not in NAMED), None)
        same = fixed or "same.ckpt"
        if all(not NAMED[s][1] or same.endswith(".ckpt") for s in named):
            found.append(([f"--{s}.filename={value(s, same)}" for s in named], pair, "same"))
        for outer, inner in [(a, b), (b, a)]:
            if inner in NAMED:
                folder = outer if outer not in NAMED else "sub.ckpt" if NAMED[outer][1] else "sub"
                args = [f"--{inner}.filename={value(inner, f'{folder}/inner.ckpt')}"]
                args += [f"--{outer}.filename={value(outer, folder)}"] if outer in NAMED else []
                found.append((args, pair, "folder"))
    uncovered = [pair for pair in pairs if not any(c[1] == list(pair) for c in found)]
    assert not uncovered, f"pairs of files no case makes collide: {uncovered}"
    return found


@pytest.fixture(scope="module")
def collisions(finished):
    return cases(unnamed_files(finished))


def names(line: str, source: str) -> bool:
    """The refusal names a part's option, or the unnamed file (or the glob it is written under)."""
    return f"--{source}.filename" in line if source in NAMED else any(fnmatchcase(source, w) for w in line.split())


def checked_by_cli(monkeypatch) -> list:
    """The arguments the CLI gives the real check before its run folder, as of its last call."""
    seen, check = [], placement.check_run_files

    def check_seen(config, parts, config_filename):
        seen[:] = [copy.deepcopy(config), parts, config_filename]
        check(config, parts, config_filename)

    monkeypatch.setattr(placement, "check_run_files", check_seen)
    return seen


def given(args: list[str]) -> dict[str, str]:
    """`--<key>.filename=<name>` as the config's key -> name."""
    pairs = (arg.removeprefix("--").partition("=") for arg in args)
    return {key.replace(".filename", ".init_args.filename"): name for key, _, name in pairs}


def refused_by_check(seen: list, args: list[str]) -> str:
    """The line the check's refusal is said in (exit 2), given the CLI's config with `args` for the names."""
    config, parts, config_filename = copy.deepcopy(seen[0]), *seen[1:]
    for key, name in {**given([f"--{k}.filename={v[0]}" for k, v in NAMED.items()]), **given(args)}.items():
        config[key] = name
    with pytest.raises(UsageError) as refused:
        placement.check_run_files(config, parts, config_filename)
    line, code = said(refused.value)
    assert code == 2, line
    return line


@pytest.mark.parametrize("key", NAMED)
def test_a_file_name_option_made_any_other_files_path_or_folder_is_refused_before_any_folder(
    key, collisions, capsys, monkeypatch
):
    """Each case of a pair goes with the pair's first option in NAMED's order; its first case of each kind (the same
    path, a folder) is a whole command."""
    mine = [case for case in collisions if next(s for s in NAMED if s in case[1]) == key]
    whole = [next(case for case in mine if case[2] == kind) for kind in ("same", "folder")]
    seen = checked_by_cli(monkeypatch)
    for args, pair, kind in whole + [case for case in mine if case not in whole]:
        if (args, pair, kind) in whole:
            line = refusal(capsys, lambda: run("fit", *SHORT, *args))  # noqa: B023 - called at once
            assert not Path("runs").exists(), args
            assert all(seen[0][key] == name for key, name in given(args).items()), args  # what the check was given
        else:
            line = refused_by_check(seen, args)
        assert all(names(line, source) for source in pair) and line.endswith("give each its own name"), (args, line)
        assert ("would be a file and a folder" in line) == (kind == "folder"), (args, line)
    later = list(NAMED)[list(NAMED).index(key) + 1 :]
    assert len(mine) >= 3 * len(later), mine  # each later option: the same path, and either one the other's folder


def test_distinct_names_are_accepted_and_every_file_the_run_holds_is_one_the_registry_knows(capsys):
    from lightning_runs.cli.placement import run_files

    names = {"best_checkpoint": "top", "last_checkpoint": "latest", "run_summary": "notes/run.json"}
    names["prediction_writer"] = "scores.csv"
    assert set(names) == set(NAMED)  # a new file-name option is given a name here too
    fitted = run("fit", *SHORT, *[f"--{key}.filename={name}" for key, name in names.items()])
    run_dir = Path("runs/tiny/version_0")
    predicted = run("predict", f"--ckpt_path={run_dir}/checkpoints/latest.ckpt")
    for key, name in names.items():
        path = f"checkpoints/{name}.ckpt" if NAMED[key][1] else name
        assert (run_dir / path).is_file(), path
    registered = [run_files(c.config[c.subcommand], list(NAMED), "config.yaml", run_dir) for c in (fitted, predicted)]
    known = {str(path.resolve().relative_to(run_dir.resolve())) for files in registered for path in files.values()}
    for file in (str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file()):
        assert any(fnmatchcase(file, k) or Path(k) in Path(file).parents for k in known), (file, known)


def test_a_checkpoint_added_to_the_trainer_and_save_last_are_in_the_registry_too(capsys):
    added = ["--trainer.callbacks+=ModelCheckpoint", "--trainer.callbacks.filename=last"]
    line = refusal(capsys, lambda: run("fit", *SHORT, *added))
    assert "--last_checkpoint.filename last and --trainer.callbacks[0].filename last" in line, line
    line = refusal(capsys, lambda: run("fit", *SHORT, "--best_checkpoint.save_last=true"))
    assert "--best_checkpoint.save_last and --last_checkpoint.filename last: both are checkpoints/last.ckpt" in line
    assert not Path("runs").exists()


def test_a_summary_leading_out_of_the_run_folder_is_refused_before_any_folder(capsys):
    line = refusal(capsys, lambda: run("fit", *SHORT, "--run_summary.filename=../../notes.json"))
    assert "--run_summary.filename ../../notes.json: runs/notes.json lies outside the run's folder" in line, line
    assert not Path("runs").exists()
