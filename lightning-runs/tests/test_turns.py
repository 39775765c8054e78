"""Workers that start together on one study start exactly the trials it needs (sweeps/turns.py, storage.work): each
counts the study's trials and starts one only in its turn. Each worker here is a process of its own on one journal
file, as `sweep` workers on one machine are."""

import subprocess
import sys
import threading

import optuna
import pytest
from optuna.trial import TrialState

from lightning_runs.sweeps.turns import Turn

# A worker: opens the study, says it is ready and waits for the line "go" (every worker ready), then works until the
# study holds two finished trials. The two sleeps are the durations tested, not waits: counting is made slow (0.3 s),
# as a database across a network makes it, and a trial takes a second, as a fit does: without turns, every worker
# counts none before any starts one.
WORKER = """
import sys, time
import optuna
import pytest
from lightning_runs.sweeps import storage, turns
optuna.logging.set_verbosity(optuna.logging.WARNING)
backend = optuna.storages.journal.JournalFileBackend("study.journal")
study = optuna.create_study(storage=optuna.storages.JournalStorage(backend), study_name="s", load_if_exists=True)
print("ready", flush=True)
sys.stdin.readline()
counted = storage.counts
storage.counts = lambda study: (counted(study), time.sleep(0.3))[0]
def objective(trial):
    time.sleep(1.0)
    return trial.suggest_float("x", 0, 1)
turn = turns.Turn("study.journal", "s", ".")
storage.work(study, objective, n_trials=2, turn=turn, wait=0.1, journal_grace=None)
"""
WORKERS = 4


@pytest.mark.slow
def test_four_workers_started_at_once_finish_exactly_n_trials(tmp_path):
    optuna.create_study(storage=journal(), study_name="s")  # created first: creating races are open_study's
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    workers = [subprocess.Popen([sys.executable, "-c", WORKER], **pipes) for _ in range(WORKERS)]
    assert [worker.stdout.readline() for worker in workers] == ["ready\n"] * WORKERS, "each opened the study"
    for worker in workers:
        worker.stdin.write("go\n")
        worker.stdin.flush()
    for worker in workers:
        _, errors = worker.communicate(timeout=120)
        assert worker.returncode == 0, errors[-2000:]
    trials = optuna.load_study(study_name="s", storage=journal()).trials
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2, "exactly n_trials, though four workers counted"


def test_a_turn_is_one_workers_at_a_time_and_given_back_by_its_holder(tmp_path):
    first, second = Turn("study.journal", "s", tmp_path), Turn("study.journal", "s", tmp_path)
    first.take()
    first.take()  # taken twice by its holder: still one turn, given back once
    assert_taken_in_turn(first, second)
    second.give()
    second.give()  # giving back a turn not held does nothing


def assert_taken_in_turn(first: Turn, second: Turn) -> None:
    """`second.take()` waits while `first` holds the turn, and takes it once `first` gives it back."""
    taken = threading.Event()
    waiting = threading.Thread(target=lambda: (second.take(), taken.set()))
    waiting.start()
    # Nothing happening can only be watched for a while: half a second, against the 10 s the turn has to arrive.
    assert not taken.wait(0.5), "a second worker took the turn while the first held it"
    first.give()
    assert taken.wait(10), "the turn given back did not reach the waiting worker"
    waiting.join()


def journal() -> optuna.storages.JournalStorage:
    """The study's journal as one more worker opens it (each JournalStorage is a worker of its own to Optuna)."""
    return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend("study.journal"))
