"""Data of any shape through every subcommand, with no change to the machinery (docs/contract.md): signals from an
.npz with a network of one's own, colour images from an ordinary LightningDataModule, a table from a CSV
(tests/tasks.py). Each is trained, tested, predicted from a file of raw samples, exported and resumed as a user
runs them."""

import csv
from dataclasses import dataclass
from pathlib import Path

import onnxruntime
import pytest
import torch

from lightning_runs.tools import export

from project.cli import cli_main
from project.model import DigitsClassifier

from support import assert_kept, assert_same_checkpoint, load, refusal, run, snapshot, working_directory
from tasks import TASKS, Task, write_samples

EPOCHS = ["--trainer.max_epochs=4"]  # seconds for each task, and enough to learn it


@dataclass
class Trained:
    task: Task
    home: Path  # the working directory the run was made in: its data files and runs/
    fit: object  # the fit's LightningCLI
    test_metrics: dict[str, float]

    @property
    def run_dir(self) -> Path:
        return self.home / "runs" / self.task.name / "version_0"

    @property
    def best(self) -> Path:
        return self.run_dir / "checkpoints/best.ckpt"

    def model(self) -> DigitsClassifier:
        return DigitsClassifier.load_from_checkpoint(self.best, map_location="cpu", weights_only=True).eval()


@pytest.fixture(scope="module", params=list(TASKS))
def trained(request, tmp_path_factory) -> Trained:
    """A task fitted for a few epochs, its best checkpoint then tested in the same command (`--test_best`, as `make
    train` runs it); the `test` subcommand on each task: test_a_checkpoint_is_evaluated_on_other_data_..."""
    task = TASKS[request.param]
    home = tmp_path_factory.mktemp(request.param)
    with working_directory(home):
        task.write_data()
        fit = run("fit", *task.options, *EPOCHS, "--test_best=true")
    return Trained(task, home, fit, {k: v.item() for k, v in fit.tested.items()})


def test_a_short_fit_learns_the_task_and_its_best_checkpoint_scores_well_above_chance(trained):
    assert trained.best.is_file(), "runs/<name>/version_0, the name the task's options give"
    assert trained.test_metrics["test/acc"] >= trained.task.learnt, trained.test_metrics


def predict(trained: Trained, path: Path, *options: str) -> list[dict[str, str]]:
    """`predict ... --data.predict_path <path>` in the task's working directory: the rows of the one predictions
    file it writes, which lies in the checkpoint's run and is all it writes."""
    with working_directory(trained.home):
        before = snapshot()
        run("predict", *options, "--data.predict_path", str(path))
        new = assert_kept(before, snapshot())
    written = [trained.home / p for p in new if Path(p).name.startswith("predictions")]
    assert [p.parent for p in written] == [trained.run_dir], new
    with written[0].open() as file:
        return list(csv.DictReader(file))


@pytest.fixture(scope="module")
def predicted(trained) -> tuple[torch.Tensor, list[dict[str, str]]]:
    """New samples and the rows of `predict --ckpt_path <the run's best.ckpt> --data.predict_path <their file>`, no
    task option typed (the run's config.yaml brings its DataModule): one command that both predict tests read."""
    samples = torch.from_numpy(trained.task.new_samples())
    path = write_samples(trained.home / ("new" + trained.task.suffix), samples.numpy())
    return samples, predict(trained, path, "--ckpt_path", str(trained.best))


def test_predict_reads_a_file_of_raw_samples_and_writes_one_row_each_that_agree_with_the_model(trained, predicted):
    samples, rows = predicted
    with torch.no_grad():
        probabilities = trained.model()(samples).softmax(dim=-1)
    confidence, labels = probabilities.max(dim=-1)
    assert [int(row["index"]) for row in rows] == list(range(len(samples)))
    assert [int(row["label"]) for row in rows] == labels.tolist()
    torch.testing.assert_close(torch.tensor([float(row["probability"]) for row in rows]), confidence)


# The closing block's `next` line: an evaluation of a run's checkpoint reads the run's config.yaml (its DataModule and
# their arguments), and a `--data.<argument>` typed on the command line wins.
def test_predict_needs_only_the_checkpoint_and_the_file_of_samples(predicted):
    samples, rows = predicted
    assert len(rows) == len(samples)


# An argument of the run's own DataModule that the default DigitsDataModule lacks (`--data.path`, `--data.n`) needs no
# `--data <class>` again: the evaluation is parsed with the run's config.yaml first (issue 51, one evaluation path).
def test_a_checkpoint_is_evaluated_on_other_data_of_its_datamodule_given_by_a_data_argument(trained):
    with working_directory(trained.home):
        other = trained.task.other_data()
        tested = run("test", "--ckpt_path", str(trained.best), *other)
    key, value = other[0].removeprefix("--data."), other[1]
    assert type(tested.datamodule) is type(trained.fit.datamodule) and str(tested.datamodule.hparams[key]) == value
    assert "test/acc" in tested.trainer.callback_metrics


def test_predicting_samples_of_another_shape_is_refused_naming_both_shapes(trained, capsys):
    if not trained.task.options[1].startswith("project.data."):  # an ordinary DataModule reads files unchecked
        pytest.skip("the template's ArrayDataModule checks samples against the model's shape; BlobsDataModule does not")
    other = trained.task.other_samples()
    model_shape = trained.fit.model.hparams.input_shape
    with working_directory(trained.home):
        path = write_samples(Path("other" + trained.task.suffix), other)
        command = ("predict", *trained.task.options, "--ckpt_path", "best", "--data.predict_path", str(path))
        error = refusal(capsys, lambda: run(*command))  # what it leaves: test_data_files.py, a strict xfail for now
    assert str(tuple(other.shape[1:])) in error and str(tuple(model_shape)) in error, error


@pytest.mark.slow
def test_the_onnx_export_takes_raw_samples_and_gives_the_checkpoint_models_outputs(trained, tmp_path):
    samples = torch.from_numpy(trained.task.new_samples())
    path = export.main(cli_main, ["--ckpt_path", str(trained.best), "--output", str(tmp_path / "model.onnx")])
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    with torch.no_grad():
        expected = trained.model()(samples)
    for batch in (samples, samples[:1]):  # any batch size
        (exported,) = session.run(None, {session.get_inputs()[0].name: batch.numpy()})
        torch.testing.assert_close(torch.from_numpy(exported), expected[: len(batch)], atol=1e-4, rtol=1e-4)


def stopped_and_resumed(options: tuple[str, ...], name: str, per_epoch: int) -> dict:
    """In the working directory: a fit of EPOCHS crashed as its third epoch begins, then `fit --ckpt_path last`
    with the same options; the last checkpoint it ends with."""
    crash = ["--trainer.callbacks+=support.CrashAt", f"--trainer.callbacks.step={2 * per_epoch}"]
    with pytest.raises(RuntimeError, match="crash"):
        run("fit", *options, *EPOCHS, *crash)
    last = Path("runs", name, "version_0/checkpoints/last.ckpt")
    assert load(last)["global_step"] == 2 * per_epoch, "stopped at the end of its second epoch"
    run("fit", *options, *EPOCHS, "--ckpt_path", "last")
    return load(last)


@pytest.mark.slow
def test_a_fit_stopped_after_two_of_its_four_epochs_resumes_to_the_same_weights(trained, tmp_path):
    with working_directory(tmp_path):
        trained.task.write_data()
        resumed = stopped_and_resumed(trained.task.options, trained.task.name, trained.fit.trainer.num_training_batches)
    assert_same_checkpoint(load(trained.run_dir / "checkpoints/last.ckpt"), resumed)


# The contract (docs/contract.md): resumes at epoch ends are exact with a plain DataLoader whose shuffle is seeded by
# the epoch, or drawn from a generator of its own seeded once in train_dataloader() (which started again from its first
# epoch's order after a resume, weights ~0.5 apart, until RandomState kept it). The global RNG's shuffle is the
# "global" case of the test above.
@pytest.mark.slow
@pytest.mark.parametrize("shuffle", ["epoch", "generator"])
def test_an_ordinary_datamodule_seeding_its_own_shuffle_resumes_to_the_same_weights(shuffle, tmp_path):
    options = (*TASKS["blobs"].options, "--data.shuffle", shuffle)
    for folder in ("reference", "resumed"):
        (tmp_path / folder).mkdir()
    with working_directory(tmp_path / "reference"):
        reference = run("fit", *options, *EPOCHS)
    with working_directory(tmp_path / "resumed"):
        resumed = stopped_and_resumed(options, "blobs", reference.trainer.num_training_batches)
    assert_same_checkpoint(load(tmp_path / "reference/runs/blobs/version_0/checkpoints/last.ckpt"), resumed)
