"""The library's tests run on tasks of their own (tiny_tasks.py), never on the template's example."""

import signal

import pytest

# A shell starts a background job (nohup, some CI runners) with SIGINT ignored, and Python then keeps it ignored: every
# Ctrl-C test would wait for a stop that never comes. The tests stand for a user at a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Every test runs in its own empty directory, so runs/ starts empty."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
