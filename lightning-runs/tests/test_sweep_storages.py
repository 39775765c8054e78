"""Many sweep workers on one study, on the storages Optuna recommends for them: the default journal file for the
workers of one machine, a real PostgreSQL server that the tests start (postgres_server.py) for workers on many, as
`postgresql://` (psycopg 3, the `postgres` extra); a study begun in SQLite continues there. A storage that cannot be
opened is one line saying what it is (exit 2), and only a study that cannot be read says to move it away; a journal a
killed worker left with a partial last line is repaired, its finished trials kept. Each worker is
`python -m tiny_tasks sweep` as a process of its own, with tiny trials (test_sweep_tool.py's)."""

import collections
import itertools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState
from test_sweep_tool import (
    NO_PRUNING,
    QUIET,
    gone,
    start_worker,
    sweep,
    trial_processes,
    trials_see_this_checkout,  # noqa: F401 - the module's autouse fixture
    wait_for,
)
from test_turns import assert_taken_in_turn
from tiny_runs import printed_once, refusal

from lightning_runs.sweeps.turns import Turn
from lightning_runs.tools import sweep as sweep_tool

HEARTBEAT = ["--heartbeat_interval=1", "--grace_period=3"]  # a dead worker is noticed 3 s on, not 30


def test_the_tests_postgresql_is_a_real_server_that_optuna_keeps_a_study_in(postgres_url):
    with sqlalchemy.create_engine(postgres_url).connect() as connection:
        version = connection.execute(sqlalchemy.text("SHOW server_version")).scalar()
    assert int(version.split(".")[0]) >= 12, version
    study = optuna.create_study(storage=postgres_url, study_name="smoke")
    study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=2)
    assert len(optuna.load_study(study_name="smoke", storage=postgres_url).trials) == 2


def test_on_postgresql_a_workers_turn_is_a_server_lock_that_excludes_a_worker_of_another_connection(postgres_url):
    first, second, other_study = (Turn(postgres_url, name, Path("unused")) for name in ("s", "s", "t"))
    first.take()
    other_study.take()  # another study's workers take turns of their own
    assert_taken_in_turn(first, second)
    second.give()
    other_study.give()


def plain(url: str) -> str:
    """The URL as a user writes it, `postgresql://` (SQLAlchemy 2.1 reads it as psycopg 3, the postgres extra's)."""
    return url.replace("postgresql+psycopg://", "postgresql://")


@pytest.fixture(params=["journal", "postgresql"])
def storage(request) -> list[str]:
    """The workers' --storage: none, the default journal file runs/sweeps/<study>.journal, or a database of its own on
    the tests' PostgreSQL server, written `postgresql://`."""
    return [] if request.param == "journal" else ["--storage", plain(request.getfixturevalue("postgres_url"))]


def opened(*args: str) -> optuna.Study:
    """A sweep that opens its study and runs no trial (it holds its trials, or is refused): a space of one value, so
    that the trials' config is parsed once before the storage is opened, not at each end of a range."""
    return sweep_tool.main(printed_once, ["--space", json.dumps({"model.lr": {"choices": [0.05]}}), *args])


def load(name: str, storage: list[str]) -> optuna.Study:
    journal = optuna.storages.journal.JournalFileBackend(f"runs/sweeps/{name}.journal")
    url = storage[1] if storage else None
    return optuna.load_study(study_name=name, storage=url or optuna.storages.JournalStorage(journal))


def taken(outputs: list[tuple[str, str]]) -> collections.Counter:
    """How many workers started each trial number ("Trial N: <command>" in their output)."""
    return collections.Counter(
        int(line.split()[1].rstrip(":")) for out, _ in outputs for line in out.splitlines() if line.startswith("Trial ")
    )


@pytest.mark.slow
def test_four_workers_finish_exactly_n_trials_each_run_by_one_of_them(storage):
    workers = [start_worker("--study=four", "--n_trials=6", *NO_PRUNING, *storage) for _ in range(4)]
    outputs = [worker.communicate(timeout=900) for worker in workers]
    for worker, (_, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err[-3000:]
    study = load("four", storage)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 6, "exactly n_trials, none left RUNNING"
    assert taken(outputs) == {number: 1 for number in range(6)}, "each trial run, and its value set, by one worker"
    assert len({t.user_attrs["run"] for t in study.trials}) == 6 == len(list(Path("runs/sweeps/four").iterdir()))
    assert len({json.dumps(t.params, sort_keys=True) for t in study.trials}) == 6, "no values tried twice"
    assert sum(1 for out, _ in outputs if "Trial " in out) >= 2, "the work was shared"
    spans = sorted((t.datetime_start, t.datetime_complete) for t in study.trials)
    assert any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans)), "two trials ran at once"


@pytest.mark.slow
def test_a_worker_killed_with_minus_9_has_its_trial_retried_once_by_another(storage):
    long = ["--trainer.max_epochs=50", "--trainer.limit_train_batches=5", *QUIET]
    first = start_worker("--study=killed", "--n_trials=3", *NO_PRUNING, *HEARTBEAT, *long, *storage)
    wait_for(lambda: Path("runs/sweeps/killed/version_0/checkpoints/last.ckpt").exists(), what="the first epoch")
    trial = trial_processes(first.pid)
    second = start_worker("--study=killed", "--n_trials=3", *NO_PRUNING, *HEARTBEAT, *storage)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)
    wait_for(lambda: all(gone(pid) for pid in trial), timeout=60, what="the killed worker's trial to end")
    _, err = second.communicate(timeout=600)
    assert second.returncode == 0, err[-3000:]

    study = load("killed", storage)
    killed = study.trials[0]
    assert killed.state == TrialState.FAIL, "not RUNNING forever"
    retries = [t for t in study.trials if optuna.storages.RetryHeartbeatStaleTrialCallback.retried_trial_number(t) == 0]
    assert len(retries) == 1, "retried once"
    assert retries[0].params == killed.params and retries[0].state == TrialState.COMPLETE
    assert [t.state for t in study.trials].count(TrialState.COMPLETE) == 3 and len(study.trials) == 4
    summary = json.loads((Path(killed.user_attrs["run"]) / "summary.json").read_text())
    assert summary["status"] == "interrupted", "SIGTERM from its dying worker: it saved last.ckpt and stopped"


@pytest.mark.slow
def test_a_trial_trailing_the_median_is_pruned_on_postgresql(postgres_url):  # on the journal: test_sweep_tool.py's
    queued = optuna.create_study(storage=postgres_url, study_name="pruning", direction="minimize")
    for params in ({"model.lr": 0.05}, {"model.lr": 1e-5}):  # a good trial, then one that learns far too slowly
        queued.enqueue_trial(params)
    study = sweep("--study=pruning", "--n_trials=2", "--storage", postgres_url)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.PRUNED]
    assert list(study.trials[1].intermediate_values) == [0], "pruned after its first validation"


def test_a_study_begun_in_sqlite_continues_there_and_the_worker_says_sqlite_serves_one_worker(capsys):
    Path("runs/sweeps").mkdir(parents=True)
    database = Path("runs/sweeps/old.db").resolve()
    begun = optuna.create_study(storage=f"sqlite:///{database}", study_name="old", direction="minimize")
    begun.add_trial(optuna.create_trial(value=0.9, params={}, distributions={}))
    study = opened("--study=old", "--n_trials=1")
    assert len(study.trials) == 1 and not Path("runs/sweeps/old.journal").exists()
    out, err = capsys.readouterr()
    assert f"Study 'old' in {database}: 1 of 1 trials finished" in out
    assert "is SQLite, which Optuna advises against for several workers at once" in err


@pytest.mark.parametrize("written", ["postgresql://", "postgresql+psycopg://"])
def test_a_postgresql_url_opens_with_psycopg_3(postgres_url, written, capsys):
    begun = optuna.create_study(storage=postgres_url, study_name="plain", direction="minimize")
    begun.add_trial(optuna.create_trial(value=0.9, params={}, distributions={}))
    url = plain(postgres_url).replace("postgresql://", written)
    study = opened("--study=plain", "--n_trials=1", "--storage", url)
    assert len(study.trials) == 1, "finished: nothing more to run"
    assert f"Study 'plain' in {written}postgres@127.0.0.1:" in capsys.readouterr().out
    assert sqlalchemy.make_url(url).get_dialect().driver == "psycopg", "psycopg 3 either way, not psycopg2"


def storage_refusal(capsys, url: str) -> str:
    """The one line a sweep on the storage `url` is refused with, before any trial and without a study written."""
    error = refusal(capsys, lambda: opened("--study=s", "--storage", url))
    assert "move it away" not in error, "the study is not what is wrong"
    assert not Path("runs/sweeps/s").exists()
    return error


def test_a_database_server_that_cannot_be_reached_or_entered_says_which_in_one_line(postgres_server, capsys):
    """Each failure in the driver's own words, after the URL (its password hidden)."""
    port, database = postgres_server.port, postgres_server.createdb("entered")
    unreachable = storage_refusal(capsys, "postgresql://postgres@127.0.0.1:1/optuna")
    assert unreachable == (
        "error: postgresql://postgres@127.0.0.1:1/optuna: cannot open it: connection failed: connection to server at"
        ' "127.0.0.1", port 1 failed: Connection refused'
    )
    unknown_host = storage_refusal(capsys, "postgresql://postgres@no-such-host.invalid/optuna")  # RFC 2606: never
    assert unknown_host.startswith("error: postgresql://postgres@no-such-host.invalid/optuna: cannot open it:")
    assert "no-such-host.invalid" in unknown_host.partition("cannot open it:")[2], "the driver's words name the host"
    no_database = storage_refusal(capsys, f"postgresql://postgres@127.0.0.1:{port}/missing")
    assert no_database.endswith('failed: FATAL:  database "missing" does not exist')
    postgres_server.password_role("sweeper", "right")
    wrong = storage_refusal(capsys, plain(database).replace("postgres@", "sweeper:wrong@"))
    assert wrong.startswith(f"error: postgresql://sweeper:***@127.0.0.1:{port}/entered: cannot open it:")
    assert wrong.endswith('failed: FATAL:  password authentication failed for user "sweeper"')


@pytest.mark.parametrize(
    "url,said",
    [
        ("postgresql+foo://h/d", "can open (Can't load plugin: sqlalchemy.dialects:postgresql.foo); give postgresql://"),
        ("://", "not a storage this sweep can open (Could not parse SQLAlchemy URL from given URL string)"),
        ("mysql://u@h/d", "driver is not installed (no module MySQLdb): install the package that provides MySQLdb"),
        ("postgresql+psycopg2://u@h/d", "(no module psycopg2): install the package that provides psycopg2"),
    ],
    ids=["unknown_driver", "no_url", "missing_driver", "psycopg2"],
)  # fmt: skip
def test_a_storage_url_no_installed_driver_opens_is_one_line_naming_what_to_give_or_install(url, said, capsys):
    assert said in storage_refusal(capsys, url)


def test_postgresql_without_its_driver_names_the_package_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as where it was never installed: import fails
    error = storage_refusal(capsys, "postgresql://u@127.0.0.1:1/d")
    assert error == (
        "error: postgresql://u@127.0.0.1:1/d: its database driver is not installed (no module psycopg): pip"
        " install 'lightning-runs[postgres]' (psycopg 3, which postgresql:// loads)"
    )


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder on a read-only filesystem (a tmpfs mounted `ro`, where this user may mount one)."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"no read-only filesystem to test on: mount said {mounted.stderr.decode().strip()!r}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_a_journal_that_cannot_be_written_where_it_is_given_says_why_in_one_line(read_only_folder, capsys):
    Path("runs").mkdir()
    for given, said in [
        ("runs", "is a folder; give a file"),
        ("nowhere/s.journal", "no such file or folder; check the path"),
        (f"{read_only_folder}/s.journal", "read-only file system; give a path on a writable one"),
    ]:
        assert storage_refusal(capsys, given) == f"error: {Path(given).resolve()}: {said}"


def test_a_journal_whose_last_record_a_killed_worker_left_partial_is_repaired_and_keeps_its_trials(capsys):
    Path("runs/sweeps").mkdir(parents=True)
    journal = Path("runs/sweeps/cut.journal")
    begun = optuna.create_study(
        storage=optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal))),
        study_name="cut",
        direction="minimize",
    )
    for value in (0.5, 0.4):
        begun.add_trial(optuna.create_trial(value=value, params={}, distributions={}))
    whole = journal.read_bytes()
    journal.write_bytes(whole + whole.splitlines(keepends=True)[-1][:25])  # a record cut off mid-write
    study = opened("--study=cut", "--n_trials=2")
    out, err = capsys.readouterr()
    assert err.count("its last record was cut short (a worker stopped mid-write); removed it") == 1, err
    assert journal.read_bytes().startswith(whole) and "Study 'cut' in" in out and "2 of 2 trials finished" in out
    assert [t.value for t in study.trials] == [0.5, 0.4], "its finished trials, readable"


JOURNAL_DAMAGE = {
    "a record lacking its study_id": lambda record: {k: v for k, v in record.items() if k != "study_id"},
    "a record that is a list": lambda record: [1, 2],
}


@pytest.mark.parametrize("damage", JOURNAL_DAMAGE.values(), ids=JOURNAL_DAMAGE.keys())
def test_a_journal_record_not_as_optuna_writes_it_is_one_line_naming_the_journal(damage, capsys):
    """Optuna replays a journal's records reading their keys unchecked: a KeyError or TypeError traceback."""
    Path("runs/sweeps").mkdir(parents=True)
    journal = Path("runs/sweeps/odd.journal")
    begun = optuna.create_study(
        storage=optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(journal))),
        study_name="odd",
    )
    begun.add_trial(optuna.create_trial(value=0.5, params={}, distributions={}))
    *records, last = journal.read_bytes().splitlines()
    journal.write_bytes(b"\n".join([*records, json.dumps(damage(json.loads(last))).encode()]) + b"\n")
    error = refusal(capsys, lambda: opened("--study=odd", "--n_trials=1"))
    assert error.startswith(f"error: {journal.resolve()}: not a readable study (a record not as Optuna writes it: ")
    assert error.endswith("move it away to start afresh")


def test_a_study_continued_with_another_recipe_or_fold_count_is_refused_before_any_trial(capsys):
    """A study kept the metric it began with, not its recipe: trials of two recipes were compared as one."""
    Path("runs/sweeps").mkdir(parents=True)
    journal = optuna.storages.journal.JournalFileBackend("runs/sweeps/kept.journal")
    begun = optuna.create_study(storage=optuna.storages.JournalStorage(journal), study_name="kept")
    begun.add_trial(optuna.create_trial(value=0.5, params={}, distributions={}))
    opened("--study=kept", "--n_trials=1", "--args=[--data.n=128]")  # records the recipe: nothing to run
    capsys.readouterr()
    for changed, said in [
        (["--args=[--data.n=64]"], "--data.n 64 (the study: 128)"),
        (["--args=[--data.n=128]", "--folds=2"], "--folds 2 (the study: None)"),
    ]:
        error = refusal(capsys, lambda: opened("--study=kept", "--n_trials=1", *changed))  # noqa: B023
        assert (
            error.startswith(f"error: {said}")
            and "began with another recipe; give another --study for this one" in error
        )
    assert len(opened("--study=kept", "--n_trials=1", "--args=[--data.n=128]").trials) == 1, "the same: continues"


def test_a_study_name_with_a_newline_is_one_line(capsys):
    assert "one folder name" in refusal(capsys, lambda: opened("--study=a\nb"))
