"""The fixtures and hooks of the template's own tests (each runs in an empty folder: tests/conftest.py). It imports
nothing heavy at the top: pytest-xdist's controller process loads it too, and never runs a test (the helpers tests
import are in support.py)."""

import sys
from pathlib import Path

import pytest

# The library's test helpers (tiny_runs.py: what a command did to the files, checkpoints compared; tiny_launchers.py:
# DDP launches) serve these tests too: one copy of each, in the library's suite, which runs alone without this one.
sys.path.append(str(Path(__file__).parents[2] / "lightning-runs/tests"))


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
