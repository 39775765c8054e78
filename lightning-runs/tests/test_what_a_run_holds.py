"""What a user finds in the folder of a short real run: TensorBoard tags at the right steps, histograms, the HPARAMS
entry, and a summary.json that agrees with the config, the checkpoints and the events. The run: the tiny task's points
as images (TinyImages), its classifier with a boolean hyperparameter (BiasOption). The pictures a module declares:
test_figures.py."""

import json
import subprocess
from pathlib import Path

import pytest
import torch
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tiny_runs import load, run, scalars

pytestmark = pytest.mark.slow  # each test reads the short run

# 5 epochs of 5 steps, histograms every 2 epochs (so epoch 5 is logged as the end of fit, not as one of every 2),
# gradient histograms on; then `test` on its best checkpoint, which logs into the same run folder.
SHORT_RUN = [
    "--data=tiny_tasks.TinyImages",
    "--model=tiny_tasks.BiasOptionClassifier",
    "--trainer.max_epochs=5",
    "--trainer.limit_train_batches=5",
    "--histograms.every_n_epochs=2",
    "--histograms.gradients=true",
]
STEPS = 25
EPOCH_ENDS = [4, 9, 14, 19, 24]  # where Lightning logs epoch metrics: the index of each epoch's last step
RUN = Path("runs/tiny/version_0")


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    """The short run's folder, and the CLI objects of its fit and its test."""
    home = tmp_path_factory.mktemp("short_run")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        fit = run("fit", *SHORT_RUN)
        test = run("test", "--ckpt_path", "best")  # the run's own config: its data and model
    assert [p.name for p in (home / RUN).parent.iterdir()] == [RUN.name]
    return home / RUN, fit, test


def steps(points) -> list[int]:
    return [point.step for point in points]


@pytest.fixture(scope="module")
def events(short_run):
    guidance = {"scalars": 0, "images": 0, "histograms": 0, "tensors": 0}  # 0: keep all, not a sample
    accumulator = EventAccumulator(str(short_run[0]), size_guidance=guidance)
    accumulator.Reload()
    return accumulator


@pytest.fixture(scope="module")
def summary(short_run):
    return json.loads((short_run[0] / "summary.json").read_text())


@pytest.mark.parametrize("tag", ["train/loss", "train/grad_norm", "lr-Adam"])
def test_loss_gradient_norm_and_the_lr_are_logged_every_step(events, tag):
    assert steps(events.Scalars(tag)) == list(range(STEPS))


def test_gradient_norm_is_the_norm_of_all_gradients(events):
    # The gradient histograms hold each parameter's gradients of an epoch's last step, with their sum of squares.
    norms = {point.step: point.value for point in events.Scalars("train/grad_norm")}
    gradients = [tag for tag in events.Tags()["histograms"] if tag.startswith("gradients/")]
    for step in (5, 10, 20, 25):  # written after the epoch whose last step is step - 1
        squares = sum(
            h.histogram_value.sum_squares for tag in gradients for h in events.Histograms(tag) if h.step == step
        )
        assert norms[step - 1] == pytest.approx(squares**0.5, rel=1e-5), step


@pytest.mark.parametrize("tag", ["val/acc", "val/loss"])
def test_epoch_metrics_are_logged_once_per_epoch(events, tag):
    assert steps(events.Scalars(tag)) == EPOCH_ENDS


def test_test_metrics_are_logged_once(events):
    assert len(events.Scalars("test/acc")) == len(events.Scalars("test/loss")) == 1


def test_weight_and_gradient_histograms_only_at_the_chosen_epochs(events, short_run):
    names = [name for name, _ in short_run[1].model.named_parameters()]
    histograms = events.Tags()["histograms"]
    assert sorted(histograms) == sorted([f"weights/{n}" for n in names] + [f"gradients/{n}" for n in names])
    for tag in histograms:
        assert steps(events.Histograms(tag)) == [5, 10, 20, 25], tag  # the first epoch, every 2, the last


def test_hparams_tab_lists_the_hyperparameters_with_the_best_monitored_score_and_its_test(events, short_run):
    run_dir = short_run[0]
    assert not [p for p in run_dir.rglob("events.*") if p.parent != run_dir], "no timestamped sub-run"
    content = events.PluginTagToContent(hparams_metadata.PLUGIN_NAME)
    experiment = hparams_metadata.parse_experiment_plugin_data(content[hparams_metadata.EXPERIMENT_TAG])
    assert {m.name.tag for m in experiment.metric_infos} == {"hp/best_val_loss", "hp/test_loss"}  # val/loss: min
    start = hparams_metadata.parse_session_start_info_plugin_data(content[hparams_metadata.SESSION_START_INFO_TAG])
    assert start.hparams["lr"].number_value == 0.05 and start.hparams["batch_size"].number_value == 32
    # TensorBoard shows each metric's latest value: declared as NaN at the start, then filled in.
    best_val_loss = min(value for _, value in scalars(run_dir, "val/loss"))
    assert events.Scalars("hp/best_val_loss")[-1].value == pytest.approx(best_val_loss)
    assert events.Scalars("hp/test_loss")[-1].value == pytest.approx(events.Scalars("test/loss")[-1].value)


def test_hparams_tab_has_the_trainer_settings_and_booleans_as_booleans(events):
    content = events.PluginTagToContent(hparams_metadata.PLUGIN_NAME)
    start = hparams_metadata.parse_session_start_info_plugin_data(content[hparams_metadata.SESSION_START_INFO_TAG])
    shown = {key: getattr(value, value.WhichOneof("kind")) for key, value in start.hparams.items()}
    settings = {key: value for key, value in shown.items() if key.startswith("trainer/")}
    assert settings == {
        "trainer/max_epochs": 5,
        "trainer/precision": "32-true",
        "trainer/devices": 1,
        "trainer/num_nodes": 1,
        "trainer/strategy": "SingleDeviceStrategy",
        "trainer/accumulate_grad_batches": 1,
    }  # no gradient clipping: an empty cell
    assert start.hparams["bias"].WhichOneof("kind") == "bool_value" and shown["bias"] is True
    experiment = hparams_metadata.parse_experiment_plugin_data(content[hparams_metadata.EXPERIMENT_TAG])
    types = {info.name: info.type for info in experiment.hparam_infos}
    assert types["bias"] == api_pb2.DATA_TYPE_BOOL and types["trainer/max_epochs"] == api_pb2.DATA_TYPE_FLOAT64
    assert not [key for key in shown if key.startswith("_")], "no LightningCLI keys (_instantiator)"


def test_summary_describes_the_run(summary, short_run):
    run_dir = short_run[0]
    assert summary["status"] == "completed" and summary["error"] is None
    assert summary["config"] == yaml.safe_load((run_dir / "config.yaml").read_text())
    assert len(summary["config_hash"]) == 64
    # The repository holding the task's module (tiny_tasks.py): records/provenance.py; test_provenance.py for others.
    here = str(Path(__file__).parent)
    commit = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True)
    assert summary["git"]["commit"] == (commit.stdout.strip() or None) and summary["git"]["dirty"] in (True, False)
    assert summary["versions"]["torch"] == torch.__version__ and summary["versions"]["lightning"]
    assert summary["device"]["accelerator"] == "CPUAccelerator" and summary["device"]["world_size"] == 1
    assert summary["wall_time_s"] > 0 and summary["samples_per_sec"] > 0


def test_summary_agrees_with_the_checkpoints(summary, short_run):
    run_dir = short_run[0]
    best, last = load(run_dir / "checkpoints/best.ckpt"), load(run_dir / "checkpoints/last.ckpt")
    assert (summary["epochs"], summary["global_step"]) == (last["epoch"] + 1, last["global_step"]) == (5, STEPS)
    assert summary["best_checkpoint"]["path"] == "checkpoints/best.ckpt"
    assert summary["last_checkpoint"] == "checkpoints/last.ckpt"
    # Early stopping watches val/loss too: the state is the best checkpoint's.
    best_state = next(v for k, v in best["callbacks"].items() if k.startswith("BestCheckpoint") and "'val/loss'" in k)
    assert summary["best_checkpoint"]["score"] == pytest.approx(best_state["best_model_score"].item())


def test_summary_agrees_with_the_events(summary, short_run):
    run_dir = short_run[0]
    for tag in ("val/acc", "val/loss", "test/acc", "test/loss"):
        assert summary["metrics"][tag] == pytest.approx(scalars(run_dir, tag)[-1][1]), tag
    assert summary["best_checkpoint"]["score"] == pytest.approx(min(v for _, v in scalars(run_dir, "val/loss")))


def test_test_on_a_checkpoint_of_the_run_adds_its_metrics_to_the_summary(summary, short_run):
    run_dir, _, test = short_run
    (evaluation,) = summary["evaluations"]
    best = load(run_dir / "checkpoints/best.ckpt")
    assert evaluation["subcommand"] == "test" and evaluation["status"] == "completed"
    assert evaluation["checkpoint"] == "checkpoints/best.ckpt" and evaluation["checkpoint_step"] == best["global_step"]
    assert evaluation["metrics"]["test/acc"] == pytest.approx(test.trainer.callback_metrics["test/acc"].item())
    assert summary["status"] == "completed", "the fit's status stays"
