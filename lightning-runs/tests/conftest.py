"""The library's tests run on tasks of their own (tiny_tasks.py), never on the template's example."""

import pytest


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Every test runs in its own empty directory, so runs/ starts empty."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
