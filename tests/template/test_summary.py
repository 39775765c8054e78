"""summary.json's building blocks: the config hash and the atomic write."""

import json
import os

import pytest

from lightning_runs.provenance import config_hash
from lightning_runs.runs import write_json  # how RunSummary writes summary.json


def test_the_same_recipe_has_the_same_config_hash_whatever_its_run_folder():
    config = {"model": {"lr": 0.01}, "trainer": {"logger": {"init_args": {"version": 0}}}, "ckpt_path": None}
    moved = {**config, "trainer": {"logger": {"init_args": {"version": 7}}}, "ckpt_path": "last"}
    other = {**config, "model": {"lr": 0.02}}
    assert config_hash(config) == config_hash(moved) != config_hash(other)


def test_a_summary_write_that_fails_leaves_the_previous_one_whole(tmp_path, monkeypatch):
    path = tmp_path / "summary.json"
    write_json(path, {"status": "running"})

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        write_json(path, {"status": "completed"})
    assert json.loads(path.read_text()) == {"status": "running"}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"], "no temporary file left behind"
