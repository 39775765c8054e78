"""MLflow, CSV and W&B instead of TensorBoard (configs/loggers/), offline: what each shows of a run, read back the way
its own tools read it, and a run that crashes, resumes with `--ckpt_path last` and is tested with `--ckpt_path best`
continuing one run of that logger in one run folder. Each logger's runs are made once per module (slow tests)."""

import csv
import json
import os
import re
import shlex
import struct
import subprocess
import sys
import time
import urllib.request
from itertools import takewhile
from pathlib import Path

import psutil
import pytest
import yaml

from lightning_runs.loggers import run_loggers as loggers
from support import (
    DEFAULT,
    QUIET,
    ROOT,
    assert_kept,
    free_port,
    load,
    run,
    run_subprocess,
    snapshot,
    start,
    wait_for,
    working_directory,
)

CONFIGS = {name: str(ROOT / f"configs/loggers/{name}.yaml") for name in ("csv", "mlflow", "wandb")}
# 3 epochs of 3 steps; pictures and histograms every 2 epochs (after step 6), and the end of fit's at step 9.
SHORT = [
    "--trainer.max_epochs=3",
    "--trainer.limit_train_batches=3",
    "--figures.every_n_epochs=2",
    "--histograms.every_n_epochs=2",
    "--histograms.gradients=true",
]
STEPS, EPOCH_ENDS = 9, [2, 5, 8]  # Lightning logs epoch metrics at the index of the epoch's last step
CRASH = ["--trainer.callbacks+=support.CrashAt", "--trainer.callbacks.step=6"]  # as epoch 3 begins: last.ckpt at 6
RUN = Path("runs/digits/version_0")


@pytest.fixture(autouse=True)
def wandb_cache(tmp_path, monkeypatch):
    """W&B's own debug logs go to its cache folder, in $HOME by default; here, the test's folder (subprocesses too)."""
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb-cache"))


def crash_resume_and_test(home: Path, logger: str) -> Path:
    """fit (crashes as its third epoch begins); fit --ckpt_path last --test_best true (finishes it, then tests its
    best checkpoint in the same process, as `make train` does); test --ckpt_path best (a command of its own)."""
    with working_directory(home), pytest.MonkeyPatch.context() as env:
        env.setenv("WANDB_CACHE_DIR", str(home / "wandb-cache"))  # as wandb_cache() does for one test
        config = ["--config", CONFIGS[logger], *SHORT]
        with pytest.raises(RuntimeError, match="crash at step 6"):
            run("fit", *config, *CRASH)
        assert load(RUN / "checkpoints/last.ckpt")["global_step"] == 6
        run("fit", *config, "--ckpt_path=last", "--test_best=true")
        run("test", *config, "--ckpt_path=best")
    return home


def run_folder_files(home: Path) -> set[str]:
    return {p.relative_to(home / RUN).as_posix() for p in (home / RUN).rglob("*") if "wandb" not in p.parts}


@pytest.fixture(scope="module")
def csv_home(tmp_path_factory) -> Path:
    return crash_resume_and_test(tmp_path_factory.mktemp("csv"), "csv")


@pytest.fixture(scope="module")
def mlflow_home(tmp_path_factory) -> Path:
    return crash_resume_and_test(tmp_path_factory.mktemp("mlflow"), "mlflow")


@pytest.fixture(scope="module")
def wandb_home(tmp_path_factory) -> Path:
    return crash_resume_and_test(tmp_path_factory.mktemp("wandb"), "wandb")


@pytest.mark.slow
@pytest.mark.parametrize("logger", list(CONFIGS))
def test_every_logger_keeps_one_run_folder_with_checkpoints_config_and_summary(logger, request):
    home = request.getfixturevalue(f"{logger}_home")
    assert [p.name for p in (home / "runs/digits").iterdir()] == ["version_0"], "the resume and the test went there"
    files = run_folder_files(home)
    assert {"checkpoints/best.ckpt", "checkpoints/last.ckpt", "summary.json"} <= files
    assert {"config.yaml", "config.fit.yaml", "config.test.yaml"} <= files  # each command's config, none clobbered
    summary = json.loads((home / RUN / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["global_step"] == STEPS
    assert [e["subcommand"] for e in summary["evaluations"]] == ["test", "test"]


# What sets a run apart, in each logger's own parameters: the trainer's settings, booleans as booleans (MLflow keeps
# every parameter as text), and none of LightningCLI's keys (`_instantiator`).
SETTINGS = {
    "trainer/max_epochs": 3,
    "trainer/precision": "32-true",
    "trainer/devices": 1,
    "trainer/accumulate_grad_batches": 1,
    "trainer/gradient_clip_val": None,
    "fused": True,
}


def logged_parameters(logger: str, request) -> dict:
    """The run's parameters as the logger's own tools show them, nested keys joined with `/`."""
    if logger == "mlflow":
        return request.getfixturevalue("mlflow_run")[1].data.params
    if logger == "csv":
        return flat(yaml.safe_load((request.getfixturevalue("csv_home") / RUN / "hparams.yaml").read_text()))
    records = request.getfixturevalue("wandb_runs")[0]  # the first fit's: the settings are logged as it starts
    return flat({i.key: json.loads(i.value_json) for r in records if r.HasField("config") for i in r.config.update})


def flat(params: dict, prefix: str = "") -> dict:
    found = {}
    for key, value in params.items():
        found |= flat(value, f"{prefix}{key}/") if isinstance(value, dict) else {f"{prefix}{key}": value}
    return found


@pytest.mark.slow
@pytest.mark.parametrize("logger", list(CONFIGS))
def test_every_logger_has_the_trainer_settings_with_booleans_as_booleans_and_no_lightningcli_keys(logger, request):
    params = logged_parameters(logger, request)
    expected = {k: str(v) for k, v in SETTINGS.items()} if logger == "mlflow" else SETTINGS
    assert {key: params.get(key) for key in SETTINGS} == expected
    assert not [key for key in params if key.startswith("_")]


# CSV: metrics.csv and hparams.yaml; no pictures.


def csv_metrics(home: Path) -> list[dict[str, str]]:
    with (home / RUN / "metrics.csv").open() as file:
        return list(csv.DictReader(file))


def csv_steps(rows: list[dict[str, str]], column: str) -> list[int]:
    return [int(row["step"]) for row in rows if row.get(column)]


@pytest.mark.slow
def test_csv_has_every_step_once_across_the_crash_and_the_resume(csv_home):
    rows = csv_metrics(csv_home)
    assert csv_steps(rows, "train/loss") == list(range(STEPS))
    assert csv_steps(rows, "lr/decay") == list(range(STEPS))
    assert csv_steps(rows, "val/acc") == EPOCH_ENDS
    # At the fit's last step when tested in its process; at 0 by a `test` command (it restores the weights only).
    assert csv_steps(rows, "test/acc") == [STEPS, 0]
    assert {"hp/best_val_acc", "hp/test_acc", "train/grad_norm"} <= set(rows[0])


@pytest.mark.slow
def test_csv_keeps_the_hyperparameters_and_no_pictures(csv_home):
    hparams = yaml.safe_load((csv_home / RUN / "hparams.yaml").read_text())
    assert hparams["lr"] == 0.01 and hparams["batch_size"] == 64
    assert not [p for p in (csv_home / RUN).rglob("*") if p.suffix in (".png", ".webp")]


@pytest.mark.slow
def test_lightnings_own_csv_logger_keeps_the_fits_rows_when_the_run_is_tested(tmp_path):
    csv_logger = ["--trainer.logger=lightning.pytorch.loggers.CSVLogger", "--trainer.logger.save_dir=runs"]
    run("fit", *csv_logger, "--trainer.max_epochs=2", "--trainer.limit_train_batches=3")
    fitted = filled(csv_metrics(tmp_path))
    run("test", *csv_logger, "--ckpt_path=best")
    rows = filled(csv_metrics(tmp_path))
    # Lightning's CSVLogger would have deleted the file and begun another with the test's rows alone.
    assert len(fitted) == 23 and rows[: len(fitted)] == fitted
    assert [row for row in rows[len(fitted) :] if "test/acc" in row]


def filled(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Each row's cells that hold a value (a header that grew adds empty cells to the rows before)."""
    return [{key: value for key, value in row.items() if value} for row in rows]


# MLflow: read with MLflow's own client from runs/mlflow.db.


@pytest.fixture(scope="module")
def mlflow_run(mlflow_home):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{mlflow_home / 'runs/mlflow.db'}")
    experiment = client.get_experiment_by_name("digits")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1, "the crashed fit, its resume and the test are one MLflow run"
    return client, runs[0]


def history(client, run, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]


@pytest.mark.slow
def test_mlflow_keeps_one_run_named_after_the_run_folder(mlflow_home, mlflow_run):
    _, found = mlflow_run
    assert (mlflow_home / RUN / "mlflow_run_id.txt").read_text().strip() == found.info.run_id
    assert found.info.run_name == "version_0" and found.data.tags["run_folder"] == str(RUN)
    assert found.info.status == "FINISHED"
    assert Path(found.info.artifact_uri).is_relative_to(mlflow_home / "runs/mlflow-artifacts/digits")


@pytest.mark.slow
@pytest.mark.parametrize(("key", "steps"), [("train/loss", range(STEPS)), ("lr/decay", range(STEPS))])
def test_mlflow_has_every_step_once_with_steps_continuing_after_the_resume(mlflow_run, key, steps):
    client, found = mlflow_run
    assert [step for step, _ in history(client, found, key)] == list(steps)


@pytest.mark.slow
def test_mlflow_has_val_acc_per_epoch_equal_to_the_summary(mlflow_home, mlflow_run):
    client, found = mlflow_run
    val_acc = history(client, found, "val/acc")
    assert [step for step, _ in val_acc] == EPOCH_ENDS
    summary = json.loads((mlflow_home / RUN / "summary.json").read_text())
    assert max(value for _, value in val_acc) == pytest.approx(summary["best_checkpoint"]["score"])
    assert found.data.metrics["hp/best_val_acc"] == pytest.approx(summary["best_checkpoint"]["score"])
    assert found.data.metrics["test/acc"] == pytest.approx(summary["evaluations"][0]["metrics"]["test/acc"])


@pytest.mark.slow
def test_mlflow_has_the_hyperparameters(mlflow_run):
    _, found = mlflow_run
    params = found.data.params
    assert params["lr"] == "0.01" and params["batch_size"] == "64"
    assert params["network/class_path"] == "project.networks.DigitsCNN"


@pytest.mark.slow
def test_mlflow_shows_only_the_runs_experiment_not_an_empty_default(mlflow_run):
    from mlflow.entities import ViewType

    client, _ = mlflow_run
    assert [e.name for e in client.search_experiments()] == ["digits"]
    (default,) = client.search_experiments(view_type=ViewType.DELETED_ONLY)  # restorable, as docs/loggers.md says
    assert default.name == "Default" and not client.search_runs([default.experiment_id], run_view_type=ViewType.ALL)


@pytest.mark.slow
def test_mlflow_has_the_pictures_by_step_and_each_config_as_artifacts(mlflow_run):
    client, found = mlflow_run
    names = [a.path for a in client.list_artifacts(found.info.run_id)]
    assert {"config.yaml", "config.fit.yaml", "images"} <= set(names)  # config.test.yaml: test logs no pictures
    pictures = {}  # images/<tag with ~ for />+step+<step>+timestamp+...png, as MLflow's log_image names them
    for artifact in client.list_artifacts(found.info.run_id, "images"):
        if artifact.path.endswith(".png"):
            key, _, step, *_ = Path(artifact.path).name.split("+")
            pictures.setdefault(key.replace("~", "/"), []).append(int(step))
    assert {tag: sorted(steps) for tag, steps in pictures.items()} == {
        "train/inputs": [0],
        "val/confusion_matrix": [6, STEPS],  # after epoch 2 (the crashed fit), the end of fit (the resumed one)
        "val/misclassified": [6, STEPS],
        "test/confusion_matrix": [0, STEPS],  # by the test command, and by the test after the resumed fit
        "test/misclassified": [0, STEPS],
    }


@pytest.mark.slow
def test_mlflow_server_serves_the_store_on_localhost(mlflow_home, mlflow_run):
    """What `make mlflow-ui` runs, on a free port: the run and its artifacts over MLflow's REST API."""
    _, found = mlflow_run
    port = free_port()
    env, command = make_recipe("mlflow-ui")
    assert command[command.index("--host") + 1] == "127.0.0.1", "this machine only"
    command[command.index("--port") + 1] = str(port)
    env = {**os.environ, **env}
    server = subprocess.Popen(command, cwd=mlflow_home, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    api = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: server.poll() is not None or answers(f"{api}/health"), timeout=180, what="the MLflow server")
        assert server.poll() is None, server.stderr.read().decode()[-2000:]
        served = get(f"{api}/api/2.0/mlflow/runs/get?run_id={found.info.run_id}")["run"]
        assert served["info"]["run_name"] == "version_0" and served["info"]["status"] == "FINISHED"
        assert {m["key"] for m in served["data"]["metrics"]} >= {"train/loss", "val/acc", "test/acc"}
        listed = get(f"{api}/api/2.0/mlflow/artifacts/list?run_id={found.info.run_id}")
        assert {"config.yaml", "images"} <= {f["path"] for f in listed["files"]}
    finally:
        stop(server)
    assert not (mlflow_home / "mlartifacts").exists() and not (mlflow_home / "mlruns").exists()


def make_recipe(target: str) -> tuple[dict[str, str], list[str]]:
    """The command `make <target>` runs and the VAR=value words before it; $(VENV) is this interpreter's venv."""
    recipe = (ROOT / "Makefile").read_text().split(f"\n{target}:")[1].split("\n\n")[0].split("\n", 1)[1]
    words = shlex.split(recipe.replace("\\\n", " ").replace("$(VENV)", str(Path(sys.executable).parent.parent)))
    assignments = list(takewhile(lambda word: re.fullmatch(r"[A-Z_]+=\S*", word), words))
    return dict(word.split("=", 1) for word in assignments), words[len(assignments) :]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        time.sleep(0.5)
        return False


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def stop(process: subprocess.Popen) -> None:
    """The server and the workers it started, by process id, waited for."""
    if process.poll() is None:
        for child in [*psutil.Process(process.pid).children(recursive=True), psutil.Process(process.pid)]:
            child.kill()
    process.wait(timeout=60)


def ddp_fit(home: Path, logger: str) -> None:
    """2 processes on CPU, 2 epochs of 3 steps each (Lightning launches the second rank: a subprocess)."""
    ddp = ["--trainer.strategy=ddp", "--trainer.devices=2", "--trainer.accelerator=cpu"]
    args = ["--config", DEFAULT, "--config", CONFIGS[logger], *QUIET, *ddp]
    result = run_subprocess("fit", *args, "--trainer.max_epochs=2", "--trainer.limit_train_batches=3", cwd=home)
    assert result.returncode == 0, result.stderr[-4000:]
    assert [p.name for p in (home / "runs/digits").iterdir()] == ["version_0"]


@pytest.mark.slow
def test_mlflow_ddp_fit_is_one_run_with_each_step_logged_once(tmp_path):
    ddp_fit(tmp_path, "mlflow")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'runs/mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("digits").experiment_id])
    assert len(runs) == 1
    assert [step for step, _ in history(client, runs[0], "train/loss")] == list(range(6)), "3 steps an epoch, once"
    assert (tmp_path / RUN / "mlflow_run_id.txt").read_text().strip() == runs[0].info.run_id


@pytest.mark.slow
def test_a_run_folder_whose_mlflow_run_is_gone_gets_a_new_one_with_a_warning(tmp_path):
    config = ["--config", CONFIGS["mlflow"], "--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
    run("fit", *config)
    first = (tmp_path / RUN / "mlflow_run_id.txt").read_text()
    (tmp_path / "runs/mlflow.db").unlink()  # as when a run folder is copied to a machine without the store
    # Another process: this one's MLflow keeps the deleted database open.
    result = run_subprocess("test", "--config", DEFAULT, *config, *QUIET, "--ckpt_path=last", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"MLflow run {first.strip()} is not in sqlite:" in result.stderr
    assert (tmp_path / RUN / "mlflow_run_id.txt").read_text() != first


MLFLOW_FIT = ["--config", DEFAULT, "--config", CONFIGS["mlflow"], *QUIET, "--trainer.max_epochs=1"]


@pytest.mark.slow
def test_two_mlflow_fits_started_together_on_a_fresh_runs_folder_both_log_and_leave_the_store_usable(tmp_path):
    from mlflow.tracking import MlflowClient

    fits = [start("fit", *MLFLOW_FIT, "--trainer.limit_train_batches=2") for _ in range(2)]
    for fit in fits:  # both migrated the new database at once: the second failed half way, a SQLAlchemy traceback
        _, err = fit.communicate(timeout=300)
        assert fit.returncode == 0, err[-3000:]
    solo = run_subprocess("fit", *MLFLOW_FIT, "--trainer.limit_train_batches=2", cwd=tmp_path)
    assert solo.returncode == 0, solo.stderr[-3000:]
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs/mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("digits").experiment_id])
    assert sorted(r.info.run_name for r in runs) == ["version_0", "version_1", "version_2"]


@pytest.mark.slow
def test_an_mlflow_store_another_process_holds_locked_is_one_line_and_no_run_folder(tmp_path):
    from mlflow.tracking import MlflowClient

    MlflowClient(f"sqlite:///{tmp_path / 'runs/mlflow.db'}").search_experiments()  # the store, created
    hold = (  # an exclusive lock, as a process writing a long transaction holds it
        "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
        " c.execute('BEGIN EXCLUSIVE'); print('held', flush=True); time.sleep(600)"
    )
    database = str(tmp_path / "runs/mlflow.db")
    holder = subprocess.Popen([sys.executable, "-c", hold, database], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        before = snapshot()
        result = run_subprocess("fit", *MLFLOW_FIT, "--trainer.limit_train_batches=2", cwd=tmp_path)
    finally:
        holder.kill()
        holder.wait()
    said = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert said == [
        f"error: the MLflow store {tmp_path.resolve() / 'runs/mlflow.db'} cannot be opened ((sqlite3.OperationalError)"
        " database is locked); if another process holds it (a tool writing to it), wait for it or close it, and run"
        " again"
    ]
    assert assert_kept(before, snapshot()) <= {"runs/mlflow.db.lock"}  # no run folder, the store untouched


# W&B offline: the offline run's transaction log (run-<id>.wandb), which `wandb sync` uploads.


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


@pytest.fixture(scope="module")
def wandb_runs(wandb_home) -> list[list]:
    """The records of each offline run in the run folder, in order: the crashed fit, its resume, the test after it
    (W&B's run is closed at the end of fit and opened again), and the test command."""
    found = sorted((wandb_home / RUN / "wandb").glob("offline-run-*/run-*.wandb"))
    return [wandb_records(path) for path in found]


@pytest.mark.slow
def test_wandb_continues_one_run_id_across_the_crash_the_resume_and_the_tests(wandb_home, wandb_runs):
    stored = (wandb_home / RUN / "wandb_run_id.txt").read_text().strip()
    assert len(wandb_runs) == 4
    for records in wandb_runs:
        started = next(r.run for r in records if r.WhichOneof("record_type") == "run")
        assert (started.run_id, started.project, started.display_name) == (stored, "digits", "version_0")


@pytest.mark.slow
def test_wandb_history_has_every_step_once_with_steps_continuing(wandb_runs):
    rows = [row for records in wandb_runs[:2] for row in wandb_rows(records, "history")]
    assert [row["trainer/global_step"] for row in rows if "train/loss" in row] == list(range(STEPS))
    assert [row["trainer/global_step"] for row in rows if "val/acc" in row] == EPOCH_ENDS


@pytest.mark.slow
def test_wandb_history_has_the_pictures_and_histograms(wandb_runs):
    rows = [row for records in wandb_runs for row in wandb_rows(records, "history")]
    kinds = {key.rsplit("/", 1)[0]: value for row in rows for key, value in row.items() if key.endswith("/_type")}
    assert kinds["train/inputs"] == kinds["val/confusion_matrix"] == kinds["test/misclassified"] == "image-file"
    assert kinds["weights/network.features.0.weight"] == "histogram"
    assert kinds["gradients/network.features.0.weight"] == "histogram"


@pytest.mark.slow
def test_wandb_summary_and_config_agree_with_the_run(wandb_home, wandb_runs):
    summary = json.loads((wandb_home / RUN / "summary.json").read_text())
    fit_summary = {k: v for update in wandb_rows(wandb_runs[1], "summary") for k, v in update.items()}
    assert fit_summary["val/acc"] == pytest.approx(summary["metrics"]["val/acc"])
    assert fit_summary["hp/best_val_acc"] == pytest.approx(summary["best_checkpoint"]["score"])
    config = {i.key: json.loads(i.value_json) for r in wandb_runs[0] if r.HasField("config") for i in r.config.update}
    assert config["lr"] == 0.01 and config["batch_size"] == 64


@pytest.mark.slow
def test_wandb_ddp_fit_is_one_run_with_each_step_logged_once(tmp_path):
    ddp_fit(tmp_path, "wandb")
    (found,) = (tmp_path / RUN / "wandb").glob("offline-run-*/run-*.wandb")
    assert found.stem == "run-" + (tmp_path / RUN / "wandb_run_id.txt").read_text().strip()
    rows = wandb_rows(wandb_records(found), "history")
    assert [row["trainer/global_step"] for row in rows if "train/loss" in row] == list(range(6))


# Without the extra: one line, no run folder left behind.


@pytest.mark.parametrize("logger", ["mlflow", "wandb"])
def test_a_logger_whose_package_is_missing_is_one_line_naming_the_extra(logger, monkeypatch, capsys):
    monkeypatch.setattr(loggers, {"mlflow": "_MLFLOW_AVAILABLE", "wandb": "_WANDB_AVAILABLE"}[logger], False)
    with pytest.raises(SystemExit) as exit:
        run("fit", "--config", CONFIGS[logger], "--trainer.max_epochs=1")
    assert exit.value.code == 2
    assert f"needs {logger}: pip install 'lightning-runs[loggers]'" in capsys.readouterr().err
    assert not Path("runs/digits").exists()
