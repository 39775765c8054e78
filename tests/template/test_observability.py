"""What the example's short run shows beside what every run shows (lightning-runs/tests/test_what_a_run_holds.py):
its recipe's tags (an LR per parameter group, train/acc, its own pictures: a confusion matrix and the misclassified
digits), runs compared by val/acc in the HPARAMS tab, and the servers' ports."""

import io
import subprocess

import pytest
from matplotlib.image import imread
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata

from support import ROOT, read_events, scalars

pytestmark = pytest.mark.slow  # each test reads the short run (the short_run fixture, conftest.py)

STEPS = 25  # the short run: 5 epochs of 5 steps
EPOCH_ENDS = [4, 9, 14, 19, 24]  # where Lightning logs epoch metrics: the index of each epoch's last step


@pytest.fixture(scope="module")
def events(short_run):
    return read_events(short_run[0])


def steps(points) -> list[int]:
    return [point.step for point in points]


def test_each_parameter_groups_lr_every_step_train_acc_every_epoch_and_the_models_pictures_every_2_epochs(events):
    for tag in ("lr/decay", "lr/no_decay"):  # the groups the example names (project/schedule.py)
        assert steps(events.Scalars(tag)) == list(range(STEPS)), tag
    assert steps(events.Scalars("train/acc")) == EPOCH_ENDS
    # DigitsClassifier.figures: after epochs 2 and 4 of every 2, and at the fit's end; then the test's.
    for name in ("confusion_matrix", "misclassified"):
        assert steps(events.Images(f"val/{name}")) == [10, 20, 25] and len(events.Images(f"test/{name}")) == 1
    grid = events.Images("val/misclassified")[-1]
    image = imread(io.BytesIO(grid.encoded_image_string), format="png")  # (H, W, channels)
    assert image.shape[:2] == (grid.height, grid.width) and grid.width > 100


def test_hparams_tab_compares_runs_by_best_val_acc_and_test_acc_and_shows_fused_as_a_boolean(events, short_run):
    content = events.PluginTagToContent(hparams_metadata.PLUGIN_NAME)
    experiment = hparams_metadata.parse_experiment_plugin_data(content[hparams_metadata.EXPERIMENT_TAG])
    assert {m.name.tag for m in experiment.metric_infos} == {"hp/best_val_acc", "hp/test_acc"}
    start = hparams_metadata.parse_session_start_info_plugin_data(content[hparams_metadata.SESSION_START_INFO_TAG])
    assert start.hparams["lr"].number_value == 0.01 and start.hparams["batch_size"].number_value == 64
    best_val_acc = max(value for _, value in scalars(short_run[0], "val/acc"))
    assert events.Scalars("hp/best_val_acc")[-1].value == pytest.approx(best_val_acc)
    assert start.hparams["fused"].WhichOneof("kind") == "bool_value" and start.hparams["fused"].bool_value is True
    types = {info.name: info.type for info in experiment.hparam_infos}
    assert types["fused"] == api_pb2.DATA_TYPE_BOOL


@pytest.mark.parametrize("target, usual", [("tensorboard", 6006), ("mlflow-ui", 5000)])
def test_the_servers_take_their_usual_port_or_the_one_given(target, usual):
    def port(*variables: str) -> str:
        dry_run = subprocess.run(["make", "-n", "-C", str(ROOT), target, *variables], capture_output=True, text=True)
        words = dry_run.stdout.replace("\\\n", " ").split()
        return words[words.index("--port") + 1]

    assert port() == str(usual)
    assert port("PORT=7123") == "7123"
