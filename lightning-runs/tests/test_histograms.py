"""A fit logs the histograms of its weights (and, when asked, of their gradients) at its first and its last epoch
and every N epochs between (pictures/histograms.py, --histograms.*)."""

from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from lightning_runs.errors import main
from tiny_tasks import cli_main

# One step an epoch, so that the global step after epoch e is e: the whole training split (192 points) in one batch.
# Not --trainer.limit_train_batches=1, which parses as the float 1.0: every batch.
ONE_STEP_AN_EPOCH = ["--data.batch_size=192", "--figures.every_n_epochs=0", "--trainer.enable_progress_bar=false"]


@pytest.mark.parametrize(
    "how_long,steps",
    [
        (["--trainer.max_epochs=1"], [1]),
        (["--trainer.max_epochs=4"], [1, 4]),
        pytest.param(["--trainer.max_epochs=25"], [1, 10, 20, 25], marks=pytest.mark.slow),
        (["--trainer.max_epochs=25", "--trainer.max_steps=7"], [1, 7]),  # a fit that ends before max_epochs
    ],
)
def test_histograms_come_at_the_first_and_the_last_epoch_and_every_n_between(how_long, steps):
    main(
        lambda: cli_main(
            ["fit", *ONE_STEP_AN_EPOCH, *how_long, "--histograms.every_n_epochs=10", "--histograms.gradients=true"]
        )
    )
    events = EventAccumulator(str(Path("runs/tiny/version_0")), size_guidance={"histograms": 0})
    events.Reload()
    histograms = events.Tags()["histograms"]
    assert {tag.split("/")[0] for tag in histograms} == {"weights", "gradients"}
    for tag in histograms:
        assert [event.step for event in events.Histograms(tag)] == steps, tag


def test_every_n_epochs_0_writes_no_histogram():
    main(lambda: cli_main(["fit", *ONE_STEP_AN_EPOCH, "--trainer.max_epochs=3", "--histograms.every_n_epochs=0"]))
    events = EventAccumulator(str(Path("runs/tiny/version_0")), size_guidance={"histograms": 0})
    events.Reload()
    assert events.Tags()["histograms"] == []
