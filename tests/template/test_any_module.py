"""Any LightningModule, any task: modules written as Lightning's docs write them (nothing of the template imported)
run every subcommand and tool through `python -m project`, chosen by class path alone."""

import contextlib
import csv
import io
import json
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch
import yaml
from sklearn.linear_model import LinearRegression

from lightning_runs.tools import runs
from lightning_runs.tools.seeds import evaluate_seeds

from project.cli import cli_main, run

from experiments.regression import split
from support import QUIET, CrashAt, cli, load, refusal

# A regression logs no val/acc: its best checkpoint watches what it does log, given as any user gives it.
REGRESSION = ["--model", "experiments.regression.Regressor", "--data", "experiments.regression.DiabetesData"]
REGRESSION += ["--best_checkpoint.monitor=val/loss", "--best_checkpoint.mode=min", "--name=diabetes"]
BORING = [
    "--model=lightning.pytorch.demos.boring_classes.BoringModel",
    "--data=lightning.pytorch.demos.boring_classes.BoringDataModule",
]
# BoringModel logs no validation metric: nothing for a best checkpoint or early stopping to watch.
UNMONITORED = ["--best_checkpoint.monitor=null", "--early_stopping=null"]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_regression_of_the_users_own_fits_resumes_tests_predicts_and_exports_by_class_path(in_tmp):
    with pytest.raises(RuntimeError, match="crash at step 20"):  # a fit stopped in its third epoch (10 steps each)
        cli("fit", *REGRESSION, "--trainer.max_epochs=12", callbacks=[CrashAt(20)])
    fitted = cli("fit", *REGRESSION, "--trainer.max_epochs=12", "--ckpt_path=last")
    folder = Path(fitted.trainer.logger.log_dir)
    assert folder == Path("runs/diabetes/version_0"), "resumed into its own run"
    assert fitted.trainer.checkpoint_callback.monitor == "val/loss"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["epochs"] == 12

    best = str(folder / "checkpoints/best.ckpt")
    tested = cli("test", f"--ckpt_path={best}")  # no --model, no --data
    mse = tested.trainer.callback_metrics["test/loss"].item()
    data = split(0)
    baseline = LinearRegression().fit(*(t.numpy() for t in data["train"]))
    baseline_mse = float(np.mean((baseline.predict(data["test"][0].numpy()) - data["test"][1].numpy()) ** 2))
    print(f"regression test MSE {mse:.1f}, linear baseline {baseline_mse:.1f}")
    assert mse < 3 * baseline_mse, "within reach of a linear fit on the same split"

    cli("predict", f"--ckpt_path={best}")
    rows = list(csv.DictReader((folder / "predictions.csv").open()))
    assert len(rows) == len(data["test"][0]) and list(rows[0]) == ["index", "output"], "the (N,) values it returns"

    exported = run(["export", f"--ckpt_path={best}", "--format=onnx"])
    session = onnxruntime.InferenceSession(str(exported))
    samples = data["test"][0][:5].numpy()  # another batch size than the export's example
    (outputs,) = session.run(None, {session.get_inputs()[0].name: samples})
    expected = tested.model.eval()(torch.as_tensor(samples)).detach().numpy()
    np.testing.assert_allclose(outputs, expected, rtol=1e-4, atol=1e-4)

    listed = runs.main(None, [])
    assert [row["run"] for row in listed] == [str(folder)]


def test_lightnings_own_demo_classes_train_and_test_with_no_validation_metric_to_watch(in_tmp, capsys):
    # Two epochs of 4 of BoringDataModule's 64 batches: the newest checkpoint is then the second epoch's.
    short = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=4", "--trainer.limit_val_batches=4"]
    fitted = cli("fit", *BORING, *UNMONITORED, *short)
    best = Path(fitted.trainer.logger.log_dir) / "checkpoints/best.ckpt"
    assert best.is_file() and load(best)["global_step"] == fitted.trainer.global_step, "unmonitored: the newest"
    # BoringModel saves no hyperparameters, so its checkpoint names no class: its run's config.yaml does, and the
    # checkpoint alone tests, predicts and exports.
    tested = cli("test", f"--ckpt_path={best}")
    assert type(tested.model).__name__ == "BoringModel" and tested.trainer.state.finished
    predicted = cli("predict", f"--ckpt_path={best}")
    assert type(predicted.datamodule).__name__ == "BoringDataModule"
    assert len((best.parents[1] / "predictions.csv").read_text().splitlines()) == 1 + 64
    line = refusal(capsys, lambda: run(["export", "--ckpt_path", str(best)]))  # nothing says what it takes
    assert line.startswith("error: BoringModel has no example_input_array: set it in __init__")


def test_a_monitor_the_model_does_not_log_is_refused_before_training_naming_what_it_logs(in_tmp, capsys):
    # The recipe watches val/acc and val/loss.
    line = refusal(capsys, lambda: cli("fit", *BORING, "--trainer.max_epochs=2"))
    assert "monitors val/" in line and "which BoringModel does not log (it logs: nothing yet)" in line
    assert not list(Path("runs").glob("*/version_*")), "no run folder left"


def test_classes_sharing_the_templates_argument_names_print_train_and_run_over_seeds_with_their_own_defaults(in_tmp):
    """jsonargparse carries the default classes' values (DigitsClassifier's lr, a PositiveFloat 0.01) over to those a
    config chooses where their names match (jsonargparse #460): `--print_config`, which the seeds tool reads, could
    not even write them as YAML."""
    config = in_tmp / "mlp.yaml"
    config.write_text(
        "model: {class_path: experiments.regression.MLPRegressor}\n"
        "data: {class_path: experiments.regression.DiabetesData}\n"
        "trainer: {max_epochs: 2}\n"
        "best_checkpoint: {init_args: {monitor: val/loss, mode: min}}  # it logs no val/acc\n"
    )
    printed = io.StringIO()
    with pytest.raises(SystemExit) as exit_, contextlib.redirect_stdout(printed):
        cli_main(["fit", "--config", str(config), "--print_config"])
    assert exit_.value.code in (0, None)
    printed = yaml.safe_load(printed.getvalue())
    assert printed["model"]["init_args"] == {"in_features": 10, "hidden": 64, "lr": 0.003, "weight_decay": 0.0001}
    assert printed["data"]["init_args"] == {"batch_size": 32, "seed": 0}

    rows = evaluate_seeds(cli_main, configs=[config], seeds=[0, 1], args=QUIET, name="mlp")["seeds"]
    assert [row["seed"] for row in rows] == [0, 1]
    saved = torch.load(rows[0]["checkpoint"], weights_only=True)
    assert (saved["hyper_parameters"]["lr"], saved["hyper_parameters"]["weight_decay"]) == (0.003, 1e-4)
    assert saved["datamodule_hyper_parameters"]["batch_size"] == 32
