"""`make mlflow-ui` as the Makefile writes it, on a free port: the store a digits fit with configs/loggers/mlflow.yaml
wrote, its run and its artifacts over MLflow's REST API, from this machine only. What each logger keeps of a run is
the library's (lightning-runs/tests/test_loggers*.py)."""

import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from itertools import takewhile
from pathlib import Path

import psutil
import pytest

from support import ROOT, free_port, run, wait_for


@pytest.mark.slow
def test_mlflow_server_serves_the_store_on_localhost(tmp_path):
    from mlflow.tracking import MlflowClient

    config = ["--config", str(ROOT / "configs/loggers/mlflow.yaml"), "--trainer.max_epochs=1"]
    run("fit", *config, "--trainer.limit_train_batches=2", "--test_best=true")
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs/mlflow.db'}")
    (found,) = client.search_runs([client.get_experiment_by_name("digits").experiment_id])
    port = free_port()
    env, command = make_recipe("mlflow-ui")
    assert command[command.index("--host") + 1] == "127.0.0.1", "this machine only"
    command[command.index("--port") + 1] = str(port)
    env = {**os.environ, **env}
    server = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    api = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: server.poll() is not None or answers(f"{api}/health"), 180, "the MLflow server", every=0.5)
        assert server.poll() is None, server.stderr.read().decode()[-2000:]
        served = get(f"{api}/api/2.0/mlflow/runs/get?run_id={found.info.run_id}")["run"]
        assert served["info"]["run_name"] == "version_0" and served["info"]["status"] == "FINISHED"
        assert {m["key"] for m in served["data"]["metrics"]} >= {"train/loss", "val/acc", "test/acc"}
        listed = get(f"{api}/api/2.0/mlflow/artifacts/list?run_id={found.info.run_id}")
        assert "images" in {f["path"] for f in listed["files"]}  # which artifacts: test_loggers_mlflow.py
    finally:
        stop(server)
    assert not (tmp_path / "mlartifacts").exists() and not (tmp_path / "mlruns").exists()


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
