"""The fixtures and hooks of the template's own tests (each runs in an empty folder: tests/conftest.py). It imports
nothing heavy at the top: pytest-xdist's controller process loads it too, and never runs a test (the helpers tests
import are in support.py)."""

import pytest


def pytest_collection_modifyitems(config, items):
    """`@pytest.mark.gpu` tests skip on a machine without CUDA (this suite's CI), and run on one that has it."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; python -m benchmarks.gpu_check runs these on one")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def short_run(tmp_path_factory):
    from support import SHORT_RUN, run, working_directory

    home = tmp_path_factory.mktemp("short_run")
    with working_directory(home):
        fit = run("fit", *SHORT_RUN)
        test = run("test", "--ckpt_path", "best")
    return home / "runs/digits/version_0", fit, test


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server on this machine for the whole session (postgres_server.py); the tests that need it
    skip with the reason where none can start."""
    import postgres_server

    try:
        import psycopg2  # noqa: F401 - the driver SQLAlchemy's postgresql+psycopg2:// URLs load
    except ImportError:
        pytest.skip("no PostgreSQL driver: pip install 'lightning-runs[postgres]' (make install does)")
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
