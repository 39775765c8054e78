"""MLflow instead of TensorBoard, in an SQLite file with no server (runs/mlflow.db, artifacts in
runs/mlflow-artifacts/), read with MLflow's own client: one MLflow run per run folder across a crash, its resume and
its tests; under DDP; when its MLflow run is gone; two fits creating the store at once; a store held locked."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_loggers import (
    EPOCH_ENDS,
    NAME,
    RUN,
    STEPS,
    assert_one_run_folder_with_checkpoints_config_and_summary,
    assert_the_trainer_settings_with_booleans_as_booleans_and_no_lightningcli_keys,
    crash_resume_and_test,
    ddp_fit,
    logger_option,
)
from tiny_runs import QUIET, command, run, snapshot, start

# Skipped without the extra, which is found without being imported: its import (0.7 s) was every worker's collection.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mlflow") is None, reason="the mlflow extra is not installed")


def mlflow_client(uri: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(uri)


@pytest.fixture(scope="module")
def mlflow_home(tmp_path_factory) -> Path:
    return crash_resume_and_test(tmp_path_factory.mktemp("mlflow"), "mlflow")


@pytest.fixture(scope="module")
def mlflow_run(mlflow_home):
    client = mlflow_client(f"sqlite:///{mlflow_home / 'runs/mlflow.db'}")
    experiment = client.get_experiment_by_name(NAME)
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1, "the crashed fit, its resume and the test are one MLflow run"
    return client, runs[0]


def history(client, run, key: str) -> list[tuple[int, float]]:
    return [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]


@pytest.mark.slow
def test_mlflow_keeps_one_run_folder_with_checkpoints_config_and_summary(mlflow_home):
    assert_one_run_folder_with_checkpoints_config_and_summary(mlflow_home)


@pytest.mark.slow
def test_mlflow_has_the_trainer_settings_as_text_and_no_lightningcli_keys(mlflow_run):
    params = mlflow_run[1].data.params
    assert_the_trainer_settings_with_booleans_as_booleans_and_no_lightningcli_keys(params, text=True)


@pytest.mark.slow
def test_mlflow_keeps_one_run_named_after_the_run_folder(mlflow_home, mlflow_run):
    _, found = mlflow_run
    assert (mlflow_home / RUN / "mlflow_run_id.txt").read_text().strip() == found.info.run_id
    assert found.info.run_name == "version_0" and found.data.tags["run_folder"] == str(RUN)
    assert found.info.status == "FINISHED"
    assert Path(found.info.artifact_uri).is_relative_to(mlflow_home / "runs/mlflow-artifacts" / NAME)


@pytest.mark.slow
@pytest.mark.parametrize(("key", "steps"), [("train/loss", range(STEPS)), ("lr-Adam", range(STEPS))])
def test_mlflow_has_every_step_once_with_steps_continuing_after_the_resume(mlflow_run, key, steps):
    client, found = mlflow_run
    assert [step for step, _ in history(client, found, key)] == list(steps)


@pytest.mark.slow
def test_mlflow_has_the_monitored_val_loss_per_epoch_equal_to_the_summary(mlflow_home, mlflow_run):
    client, found = mlflow_run
    val_loss = history(client, found, "val/loss")
    assert [step for step, _ in val_loss] == EPOCH_ENDS
    summary = json.loads((mlflow_home / RUN / "summary.json").read_text())
    assert min(value for _, value in val_loss) == pytest.approx(summary["best_checkpoint"]["score"])
    assert found.data.metrics["hp/best_val_loss"] == pytest.approx(summary["best_checkpoint"]["score"])
    assert found.data.metrics["test/loss"] == pytest.approx(summary["evaluations"][0]["metrics"]["test/loss"])


@pytest.mark.slow
def test_mlflow_has_the_hyperparameters(mlflow_run):
    _, found = mlflow_run
    params = found.data.params
    assert params["lr"] == "0.05" and params["batch_size"] == "32"  # the tiny task's defaults
    assert params["input_shape"] == "[1, 4, 4]", "the model's, given by the data"


@pytest.mark.slow
def test_mlflow_shows_only_the_runs_experiment_not_an_empty_default(mlflow_run):
    from mlflow.entities import ViewType

    client, _ = mlflow_run
    assert [e.name for e in client.search_experiments()] == [NAME]
    (default,) = client.search_experiments(view_type=ViewType.DELETED_ONLY)  # restorable from MLflow's trash
    assert default.name == "Default" and not client.search_runs([default.experiment_id], run_view_type=ViewType.ALL)


@pytest.mark.slow
def test_mlflow_has_the_declared_pictures_by_step_and_each_config_as_artifacts(mlflow_home, mlflow_run):
    client, found = mlflow_run
    names = [a.path for a in client.list_artifacts(found.info.run_id)]
    assert {"config.yaml", "config.fit.yaml", "config.test.yaml", "images"} <= set(names)
    local = Path(found.info.artifact_uri)
    assert (local / "config.fit.yaml").read_bytes() == (mlflow_home / RUN / "config.fit.yaml").read_bytes()
    pictures = {}  # images/<tag with ~ for />+step+<step>+timestamp+...png, as MLflow's log_image names them
    for artifact in client.list_artifacts(found.info.run_id, "images"):
        if artifact.path.endswith(".png"):
            key, _, step, *_ = Path(artifact.path).name.split("+")
            pictures.setdefault(key.replace("~", "/"), []).append(int(step))
    assert {tag: sorted(steps) for tag, steps in pictures.items()} == {
        "val/weights": [6, STEPS],  # after epoch 2 (the crashed fit), the end of fit (the resumed one)
        "test/weights": [0, STEPS],  # by the test command, and by the test after the resumed fit
    }


def mlflow_runs(home: Path, name: str = "tiny") -> tuple:
    client = mlflow_client(f"sqlite:///{home / 'runs/mlflow.db'}")
    return client, client.search_runs([client.get_experiment_by_name(name).experiment_id])


@pytest.mark.slow
def test_mlflow_ddp_fit_is_one_run_with_each_step_logged_once(tmp_path):
    folder = ddp_fit(tmp_path, "mlflow")
    client, runs = mlflow_runs(tmp_path)
    assert len(runs) == 1
    assert [step for step, _ in history(client, runs[0], "train/loss")] == list(range(6)), "3 steps an epoch, once"
    assert (folder / "mlflow_run_id.txt").read_text().strip() == runs[0].info.run_id


ONE_EPOCH = [logger_option("mlflow"), *QUIET, "--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]


@pytest.mark.slow
def test_a_run_folder_whose_mlflow_run_is_gone_gets_a_new_one_with_a_warning():
    run("fit", *ONE_EPOCH)
    stored = Path("runs/tiny/version_0/mlflow_run_id.txt")
    first = stored.read_text()
    Path("runs/mlflow.db").unlink()  # as when a run folder is copied to a machine without the store
    # Another process: this one's MLflow keeps the deleted database open.
    result = command("test", *ONE_EPOCH, "--ckpt_path=last")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"MLflow run {first.strip()} is not in sqlite:" in result.stderr
    assert stored.read_text() != first


@pytest.mark.slow
def test_two_mlflow_fits_started_together_on_a_fresh_runs_folder_both_log_and_leave_the_store_usable(tmp_path):
    fits = [start("fit", *ONE_EPOCH) for _ in range(2)]
    for fit in fits:  # both migrated the new database at once: the second failed half way, a SQLAlchemy traceback
        _, err = fit.communicate(timeout=300)
        assert fit.returncode == 0, err[-3000:]
    solo = command("fit", *ONE_EPOCH)
    assert solo.returncode == 0, solo.stderr[-3000:]
    _, runs = mlflow_runs(tmp_path)
    assert sorted(r.info.run_name for r in runs) == ["version_0", "version_1", "version_2"]


@pytest.mark.slow
def test_an_mlflow_store_another_process_holds_locked_is_one_line_and_no_run_folder(tmp_path):
    mlflow_client(f"sqlite:///{tmp_path / 'runs/mlflow.db'}").search_experiments()  # the store, created
    hold = (  # an exclusive lock, as a process writing a long transaction holds it
        "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
        " c.execute('BEGIN EXCLUSIVE'); print('held', flush=True); time.sleep(600)"
    )
    database = str(tmp_path / "runs/mlflow.db")
    holder = subprocess.Popen([sys.executable, "-c", hold, database], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        before = snapshot()
        result = command("fit", *ONE_EPOCH)
    finally:
        holder.kill()
        holder.wait()
    said = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    # Exit 2: RunsCLI words a failure of a class built from the config (here the logger's) as a usage error.
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert said == [
        f"error: the MLflow store {tmp_path.resolve() / 'runs/mlflow.db'} cannot be opened ((sqlite3.OperationalError)"
        " database is locked); if another process holds it (a tool writing to it), wait for it or close it, and run"
        " again"
    ]
    after = snapshot()
    assert {p: d for p, d in after.items() if p in before} == before, "an existing file changed or went"
    assert set(after) - set(before) <= {"runs/mlflow.db.lock"}  # no run folder, the store untouched
