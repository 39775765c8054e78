"""Three tasks of other shapes, each written as Lightning's docs write a module and a DataModule (nothing of the
template imported, tests/template/experiments/), each through the whole chain by class path: fit, stopped and resumed
with `--ckpt_path last`, `test --ckpt_path <best>` alone, predict, ONNX at another batch size, `runs`; each scored
beside a simple baseline on the same split. An autoencoder (batches without targets), a GRU on sequences, and a
classifier written for another template (its own argument names, torchmetrics, `self.log` alone), given by a config."""

import csv
import json
import signal
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression

from lightning_runs.tools import runs

from project.cli import run

from experiments.autoencoder import samples
from experiments.other_template import wine_split
from experiments.sequence import GRUClassifier, WalkData, sequences
from support import QUIET, CrashAt, cli, load, refusal, start

EXPERIMENTS = Path(__file__).parent / "experiments"
# Each run named as a user names it: by --name, or by its config file's name (runs/other_template/).
# What best.ckpt watches is given where the task logs no val/acc, the recipe's default.
BY_LOSS = ["--best_checkpoint.monitor=val/loss", "--best_checkpoint.mode=min"]
AUTOENCODER = ["--model", "experiments.autoencoder.AutoEncoder", "--data", "experiments.autoencoder.FactorData"]
AUTOENCODER += [*BY_LOSS, "--name=autoencoder"]
SEQUENCE = ["--model", "experiments.sequence.GRUClassifier", "--data", "experiments.sequence.WalkData", "--name=walks"]
REGRESSION = ["--model", "experiments.regression.Regressor", "--data", "experiments.regression.DiabetesData"]
REGRESSION += [*BY_LOSS, "--name=diabetes"]
OTHER_TEMPLATE = ["--config", str(EXPERIMENTS / "other_template.yaml")]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def crashed_and_resumed(args: list[str], epochs: int, crash: int) -> Path:
    """The run folder of a fit that crashed as step `crash` began, then finished with `--ckpt_path last`."""
    with pytest.raises(RuntimeError, match=f"crash at step {crash}"):
        cli("fit", *args, f"--trainer.max_epochs={epochs}", callbacks=[CrashAt(crash)])
    fitted = cli("fit", *args, f"--trainer.max_epochs={epochs}", "--ckpt_path=last")
    folder = Path(fitted.trainer.logger.log_dir)
    assert folder.name == "version_0", "resumed into its own run"
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["epochs"] == epochs
    return folder


def onnx_matches_eager(best: Path, model: torch.nn.Module, samples: torch.Tensor) -> None:
    """`export --format onnx`, run by onnxruntime at the batch size of `samples` (not the export example's)."""
    exported = run(["export", f"--ckpt_path={best}", "--format=onnx"])
    session = onnxruntime.InferenceSession(str(exported))
    (outputs,) = session.run(None, {session.get_inputs()[0].name: samples.numpy()})
    expected = model.eval()(samples).detach().numpy()
    np.testing.assert_allclose(outputs, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.slow  # ~8 s: 30 epochs; the everyday suite runs the regression chain of test_any_module
def test_an_autoencoder_whose_batches_have_no_targets_runs_the_whole_chain_beside_pca(in_tmp):
    folder = crashed_and_resumed(AUTOENCODER, epochs=30, crash=25)  # 10 steps an epoch: in its third
    assert folder == Path("runs/autoencoder/version_0")
    best = folder / "checkpoints/best.ckpt"
    tested = cli("test", f"--ckpt_path={best}")  # no --model, no --data: the run's config.yaml names both
    mse = tested.trainer.callback_metrics["test/loss"].item()
    data = samples(0)
    pca = PCA(n_components=3).fit(data["train"].numpy())  # the same code size, the same split
    pca_mse = float(np.mean((pca.inverse_transform(pca.transform(data["test"].numpy())) - data["test"].numpy()) ** 2))
    mean_mse = float(((data["test"] - data["train"].mean(0)) ** 2).mean())
    print(f"autoencoder test MSE {mse:.4f}, PCA(3) {pca_mse:.4f}, the mean {mean_mse:.4f}")
    assert mse < 2 * pca_mse and mse < mean_mse / 5, (
        "a 3-value code: near PCA's on these tanh mixtures, far below the mean"
    )

    cli("predict", f"--ckpt_path={best}")
    reconstructions = np.load(folder / "predictions.npy")  # (N, 20): too wide for a CSV row
    index = [int(row["index"]) for row in csv.DictReader((folder / "predictions.csv").open())]
    assert reconstructions.shape == (len(data["test"]), 20) and index == list(range(len(data["test"])))
    np.testing.assert_allclose(reconstructions, tested.model.eval()(data["test"]).detach().numpy(), atol=1e-5)

    onnx_matches_eager(best, tested.model, data["test"][:7])
    assert [row["run"] for row in runs.main(None, [])] == [str(folder)]


@pytest.mark.slow  # ~6 s: torch.onnx's export of the GRU alone takes ~3 s
def test_a_gru_on_sequences_runs_the_whole_chain_beside_a_constant_and_a_logistic_baseline(in_tmp):
    folder = crashed_and_resumed(SEQUENCE, epochs=15, crash=40)  # 16 steps an epoch: in its third
    best = folder / "checkpoints/best.ckpt"
    tested = cli("test", f"--ckpt_path={best}")
    assert tested.model.hparams.num_classes == 2, "linked from WalkData.num_classes"
    accuracy = tested.trainer.callback_metrics["test/acc"].item()
    data = sequences(0)
    (x, y), (test_x, test_y) = data["train"], data["test"]
    constant = max(test_y.float().mean().item(), 1 - test_y.float().mean().item())  # the majority class
    logistic = LogisticRegression(max_iter=2000).fit(x.flatten(1).numpy(), y.numpy())
    logistic_accuracy = logistic.score(test_x.flatten(1).numpy(), test_y.numpy())
    print(f"GRU test accuracy {accuracy:.3f}, logistic (flat) {logistic_accuracy:.3f}, constant {constant:.3f}")
    assert accuracy > constant + 0.15 and accuracy > logistic_accuracy, "the order of the steps is what it learns"

    cli("predict", f"--ckpt_path={best}")
    rows = list(csv.DictReader((folder / "predictions.csv").open()))  # its (N, 2) probabilities, as returned
    assert list(rows[0]) == ["index", "output_0", "output_1"] and len(rows) == len(test_x)
    eager = tested.model.eval()(test_x).softmax(dim=1)
    written = torch.tensor([[float(row["output_0"]), float(row["output_1"])] for row in rows])
    torch.testing.assert_close(written, eager, rtol=0, atol=1e-6, msg="in input order")

    onnx_matches_eager(best, tested.model, test_x[:5])  # the export's example is a batch of 2
    assert [row["run"] for row in runs.main(None, [])] == [str(folder)]


@pytest.mark.slow  # ~6 s: the everyday suite runs the regression chain of test_any_module
def test_a_classifier_written_for_another_template_runs_from_its_own_config_beside_logistic_regression(in_tmp):
    folder = crashed_and_resumed(OTHER_TEMPLATE, epochs=30, crash=20)  # 7 steps an epoch: in its third
    assert folder == Path("runs/other_template/version_0"), "named by its config file"
    best = folder / "checkpoints/best.ckpt"
    tested = cli("test", f"--ckpt_path={best}")
    assert tested.trainer.checkpoint_callback.monitor == "val/acc", "it logs the recipe's val/acc"
    accuracy = tested.trainer.callback_metrics["test/acc"].item()
    data = wine_split(0)
    logistic = LogisticRegression(max_iter=2000).fit(*(t.numpy() for t in data["train"]))
    logistic_accuracy = logistic.score(*(t.numpy() for t in data["test"]))
    constant = data["test"][1].bincount().max().item() / len(data["test"][1])
    print(f"wine test accuracy {accuracy:.3f}, logistic regression {logistic_accuracy:.3f}, constant {constant:.3f}")
    assert accuracy >= logistic_accuracy - 0.1 and accuracy > constant + 0.3

    cli("predict", f"--ckpt_path={best}")
    rows = list(csv.DictReader((folder / "predictions.csv").open()))
    assert list(rows[0]) == ["index", "output"] and len(rows) == len(data["test"][0])
    assert [int(row["output"]) for row in rows] == tested.model.eval()(data["test"][0]).argmax(dim=1).tolist()

    onnx_matches_eager(best, tested.model, data["test"][0][:9])  # the example is a batch of 4
    assert [row["run"] for row in runs.main(None, [])] == [str(folder)]


class GRUAskingForClasses(GRUClassifier):
    """The GRU as Lightning's docs write an __init__: `num_classes` required, no default, for the data to give."""

    def __init__(self, num_classes: int, features: int = 2, hidden: int = 16, lr: float = 0.01) -> None:
        super().__init__(num_classes, features, hidden, lr)


class WalkDataWithoutClasses(WalkData):
    num_classes = None


ASKING = ["--model", f"{__name__}.GRUAskingForClasses", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]


def test_a_module_whose_num_classes_has_no_default_gets_it_from_the_data(in_tmp, capsys):
    fitted = cli("fit", *ASKING, "--data", "experiments.sequence.WalkData")
    assert fitted.model.hparams.num_classes == 2
    best = Path(fitted.trainer.checkpoint_callback.best_model_path)
    assert cli("test", f"--ckpt_path={best}").model.hparams.num_classes == 2, "from the checkpoint alone"

    # A DataModule with none: the model's own failure to build, in one line (cli.py's link gives it None).
    refusal(capsys, lambda: cli("fit", *ASKING, "--data", f"{__name__}.WalkDataWithoutClasses"))
    assert not list(Path("runs").glob("*/version_1")), "no run folder left"


# Each experiment (args, steps an epoch) killed with -9 in a process of its own, as its third epoch's sixth step
# begins: last.ckpt then holds the end of epoch 2, and `--ckpt_path last` finishes the run as if it had never stopped.
KILLED = {
    "regression": (REGRESSION, 10),
    "autoencoder": (AUTOENCODER, 10),
    "sequence": (SEQUENCE, 16),
    "other_template": (OTHER_TEMPLATE, 7),
}


@pytest.mark.slow
@pytest.mark.parametrize("experiment", list(KILLED))
def test_each_experiment_killed_with_minus_9_resumes_from_last_exactly(experiment, in_tmp, monkeypatch):
    args, per_epoch = KILLED[experiment]
    args = [*args, "--trainer.max_epochs=4"]
    (in_tmp / "reference").mkdir()
    monkeypatch.chdir(in_tmp / "reference")
    reference = Path(cli("fit", *args).trainer.logger.log_dir).resolve()
    monkeypatch.chdir(in_tmp)
    kill = ["--trainer.callbacks+=support.SignalAt", f"--trainer.callbacks.step={2 * per_epoch + 5}"]
    process = start("fit", *QUIET, *args, *kill, f"--trainer.callbacks.signum={int(signal.SIGKILL)}")
    process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL, "killed, not ended"
    folder = reference.relative_to(in_tmp / "reference")
    assert load(folder / "checkpoints/last.ckpt")["global_step"] == 2 * per_epoch, "what was on disk: epoch 2"

    cli("fit", *args, "--ckpt_path=last")
    assert json.loads((folder / "summary.json").read_text())["status"] == "completed"
    resumed, whole = load(folder / "checkpoints/last.ckpt"), load(reference / "checkpoints/last.ckpt")
    assert resumed["global_step"] == whole["global_step"] == 4 * per_epoch
    for key, weights in whole["state_dict"].items():
        assert torch.equal(weights, resumed["state_dict"][key]), key
    assert [row["run"] for row in runs.main(None, [])] == [str(folder)]
