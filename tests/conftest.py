"""The project's tests run each in an empty directory of its own, so every run's runs/ starts empty."""

import gc
import signal

import pytest

# Collection imports torch, Lightning and the code under test: objects that live as long as the session, which the
# garbage collector walked again and again as they came (40% of the imports' CPU). It waits, then they are frozen, as
# `lightning_runs.main` does for a command.
gc.disable()


def pytest_collection_finish(session):
    gc.freeze()
    gc.enable()


# A shell starts a background job (`make test &`, nohup, some CI runners) with SIGINT ignored, and Python then keeps
# it ignored: every Ctrl-C test would wait for a stop that never comes. The tests stand for a user at a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path
