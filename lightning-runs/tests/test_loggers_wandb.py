"""Weights & Biases instead of TensorBoard, offline: the offline run's transaction log (run-<id>.wandb, which
`wandb sync` uploads) in the run folder, read record by record: one W&B run id across a crash, its resume and its
tests, every step once, the pictures and histograms, and a DDP fit logged once."""

import importlib.util
import json
import struct
from pathlib import Path

import pytest
from test_loggers import (
    EPOCH_ENDS,
    RUN,
    STEPS,
    assert_one_run_folder_with_checkpoints_config_and_summary,
    assert_the_trainer_settings_with_booleans_as_booleans_and_no_lightningcli_keys,
    crash_resume_and_test,
    ddp_fit,
    flat,
)
from tiny_runs import wait_for

# Skipped without the extra, which is found without being imported: its import (0.4 s) was every worker's collection.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("wandb") is None, reason="the wandb extra is not installed")


@pytest.fixture(autouse=True)
def wandb_cache(tmp_path, monkeypatch):
    """W&B's own debug logs go to its cache folder, in $HOME by default; here, the test's folder (subprocesses too)."""
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb-cache"))


@pytest.fixture(scope="module")
def wandb_home(tmp_path_factory) -> Path:
    return crash_resume_and_test(tmp_path_factory.mktemp("wandb"), "wandb")


def wandb_records(path: Path) -> list:
    """The records of a .wandb file: LevelDB's log format (32 KiB blocks of chunks, each with a 7-byte header:
    CRC, length, type full/first/middle/last) after W&B's own 7-byte header, each record a protobuf."""
    from wandb.proto import wandb_internal_pb2

    data, block, records, pending = path.read_bytes(), 32768, [], b""
    assert data[:4] == b":W&B"
    position = 7
    while position + 7 <= len(data):
        room = block - position % block
        _, length, kind = struct.unpack("<IHB", data[position : position + 7])
        if room < 7 or (length == 0 and kind == 0):  # the rest of a block is padding
            position += room
            continue
        pending += data[position + 7 : position + 7 + length]
        position += 7 + length
        if kind in (1, 4):  # a full record, or the last chunk of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def wandb_rows(records: list, kind: str) -> list[dict]:
    """History rows or summary updates as {key: value}, nested keys joined with `/` (an image's: `tag/_type`)."""
    items = {"history": lambda r: r.history.item, "summary": lambda r: r.summary.update}[kind]
    return [
        {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in items(r)}
        for r in records
        if r.WhichOneof("record_type") == kind
    ]


def wandb_config(records: list) -> dict:
    return {i.key: json.loads(i.value_json) for r in records if r.HasField("config") for i in r.config.update}


@pytest.fixture(scope="module")
def wandb_runs(wandb_home) -> list[list]:
    """The records of each offline run in the run folder, in order: the crashed fit, its resume, the test after it
    (W&B's run is closed at the end of fit and opened again), and the test command."""
    found = sorted((wandb_home / RUN / "wandb").glob("offline-run-*/run-*.wandb"))
    # W&B's service writes each log on its own: a run is whole once its exit record is in (the last command's run may
    # still be writing as finish() returns; a process's exit waits for it).
    wait_for(lambda: all(ended(path) for path in found), timeout=60, what="each W&B run's exit record")
    return [wandb_records(path) for path in found]


def ended(path: Path) -> bool:
    try:
        records = wandb_records(path)
    except Exception:  # a record half written
        return False
    return bool(records) and records[-1].WhichOneof("record_type") == "exit"


@pytest.mark.slow
def test_wandb_keeps_one_run_folder_with_checkpoints_config_and_summary(wandb_home):
    assert_one_run_folder_with_checkpoints_config_and_summary(wandb_home)


@pytest.mark.slow
def test_wandb_has_the_trainer_settings_with_booleans_as_booleans_and_no_lightningcli_keys(wandb_runs):
    params = flat(wandb_config(wandb_runs[0]))  # the first fit's: the settings are logged as it starts
    assert_the_trainer_settings_with_booleans_as_booleans_and_no_lightningcli_keys(params, text=False)


@pytest.mark.slow
def test_wandb_continues_one_run_id_across_the_crash_the_resume_and_the_tests(wandb_home, wandb_runs):
    stored = (wandb_home / RUN / "wandb_run_id.txt").read_text().strip()
    assert len(wandb_runs) == 4
    for records in wandb_runs:
        started = next(r.run for r in records if r.WhichOneof("record_type") == "run")
        assert (started.run_id, started.project, started.display_name) == (stored, RUN.parent.name, "version_0")


@pytest.mark.slow
def test_wandb_history_has_every_step_once_with_steps_continuing(wandb_runs):
    rows = [row for records in wandb_runs[:2] for row in wandb_rows(records, "history")]
    assert [row["trainer/global_step"] for row in rows if "train/loss" in row] == list(range(STEPS))
    assert [row["trainer/global_step"] for row in rows if "val/loss" in row] == EPOCH_ENDS


@pytest.mark.slow
def test_wandb_history_has_the_pictures_and_histograms(wandb_runs):
    rows = [row for records in wandb_runs for row in wandb_rows(records, "history")]
    kinds = {key.rsplit("/", 1)[0]: value for row in rows for key, value in row.items() if key.endswith("/_type")}
    assert kinds["val/weights"] == kinds["test/weights"] == "image-file"  # the pictures the module declares
    assert kinds["weights/layer.weight"] == "histogram"
    assert kinds["gradients/layer.weight"] == "histogram"


@pytest.mark.slow
def test_wandb_summary_and_config_agree_with_the_run(wandb_home, wandb_runs):
    summary = json.loads((wandb_home / RUN / "summary.json").read_text())
    fit_summary = {k: v for update in wandb_rows(wandb_runs[1], "summary") for k, v in update.items()}
    assert fit_summary["val/loss"] == pytest.approx(summary["metrics"]["val/loss"])
    assert fit_summary["hp/best_val_loss"] == pytest.approx(summary["best_checkpoint"]["score"])
    config = wandb_config(wandb_runs[0])
    assert config["lr"] == 0.05 and config["batch_size"] == 32  # the tiny task's defaults


@pytest.mark.slow
def test_wandb_ddp_fit_is_one_run_with_each_step_logged_once(tmp_path):
    folder = ddp_fit(tmp_path, "wandb")
    (found,) = (folder / "wandb").glob("offline-run-*/run-*.wandb")
    assert found.stem == "run-" + (folder / "wandb_run_id.txt").read_text().strip()
    rows = wandb_rows(wandb_records(found), "history")
    assert [row["trainer/global_step"] for row in rows if "train/loss" in row] == list(range(6))
