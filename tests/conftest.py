"""The project's tests run each in an empty directory of its own, so every run's runs/ starts empty."""

import pytest


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path
