"""The library's tests run on tasks of their own (tiny_tasks.py), never on the template's example."""

import gc
import signal

import pytest

from lightning_runs import console

# Collection imports torch, Lightning and the code under test: objects that live as long as the session, which the
# garbage collector walked again and again as they came (40% of the imports' CPU). It waits, then they are frozen, as
# `lightning_runs.main` does for a command.
gc.disable()


def pytest_collection_finish(session):
    gc.freeze()
    gc.enable()


# A shell starts a background job (nohup, some CI runners) with SIGINT ignored, and Python then keeps it ignored: every
# Ctrl-C test would wait for a stop that never comes. The tests stand for a user at a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    """`@pytest.mark.gpu` tests skip on a machine without CUDA (CI's), and run on one that has it."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; python -m benchmarks.gpu_check runs these on one")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Every test runs in its own empty directory, so runs/ starts empty, and names the package of the module it runs
    (a process runs one project; a test worker runs many)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(console, "_program", console.PLACEHOLDER)
    return tmp_path


# Runs the tests start from, made once a session (a test worker's): each test copies one into its own folder or only
# reads it, never writes into it.
@pytest.fixture(scope="session")
def finished(tmp_path_factory):
    """runs/ of a short fit that finished: one epoch of two batches."""
    return _fit(tmp_path_factory, "finished", "--trainer.max_epochs=1")


@pytest.fixture(scope="session")
def finished_two_epochs(tmp_path_factory):
    """runs/ of a fit of two epochs of two batches that finished."""
    return _fit(tmp_path_factory, "finished_two_epochs", "--trainer.max_epochs=2")


def _fit(tmp_path_factory, name: str, *args: str):
    from tiny_runs import run

    home = tmp_path_factory.mktemp(name)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        run("fit", *args, "--trainer.limit_train_batches=2")
    return home / "runs"


@pytest.fixture(scope="session")
def stopped(tmp_path_factory):
    """runs/ of a run of two epochs of two batches stopped as its second epoch began (a crash at step 2): a fit
    resumes its last.ckpt."""
    from tiny_runs import run

    from lightning_runs.testing import CrashAt

    home = tmp_path_factory.mktemp("stopped")
    with pytest.MonkeyPatch.context() as patch, pytest.raises(RuntimeError, match="crash"):
        patch.chdir(home)
        run("fit", "--trainer.max_epochs=2", "--trainer.limit_train_batches=2", callbacks=[CrashAt(step=2)])
    return home / "runs"


# What a fresh interpreter holds after importing the CLI, then the data parts too: one process (~4 s, most of it
# Lightning's import) for the tests of what each start-up leaves out. The garbage collector off (what is imported is the
# same): it walked the imports' millions of objects again and again, ~1 s of 5.
MODULES_IMPORTED = """
import gc; gc.disable()
import json, sys
import lightning_runs, lightning_runs.cli.runs_cli
cli = sorted(sys.modules)
import lightning_runs.data
print(json.dumps({"cli": cli, "cli and data": sorted(sys.modules)}))
"""


@pytest.fixture(scope="session")
def modules_imported() -> dict[str, set[str]]:
    """The modules of a fresh process that imported lightning_runs.cli.runs_cli ("cli"), then lightning_runs.data."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", MODULES_IMPORTED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return {stage: set(names) for stage, names in json.loads(done.stdout.splitlines()[-1]).items()}


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server on this machine for the whole session (postgres_server.py); the tests that need it
    skip with the reason where none can start."""
    import postgres_server

    try:
        import psycopg  # noqa: F401 - psycopg 3, the driver SQLAlchemy's postgresql:// URLs load
    except ImportError:
        pytest.skip("no PostgreSQL driver: pip install 'lightning-runs[postgres]'")
    try:
        server = postgres_server.start()
    except postgres_server.Unavailable as reason:
        pytest.skip(f"no PostgreSQL server: {reason}")
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server, request):
    """The SQLAlchemy URL of a new, empty database of its own on the session's server, for one test."""
    import re

    return postgres_server.createdb(re.sub(r"\W", "_", request.node.name.lower())[:60])
