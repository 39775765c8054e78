"""`predict` writes what the module's `predict_step` returns, one row per input in the inputs' order
(predictions/prediction_writer.py): its columns follow what predict_step returns, never its values; an output that is
not one row per input is one line and no file; nothing is overwritten, nothing half-written. Each test predicts with a
module of its own on the tiny task, in this process, and reads the files back against the module's own outputs."""

import csv
import os
import shutil
import signal
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
from tiny_runs import QUIET, assert_kept, command, refusal, run, slow_repeats, snapshot
from torch import nn

from lightning_runs.predictions import prediction_writer
from lightning_runs.testing import SignalAt
from tiny_tasks import TinyClassifier

HERE = "test_predictions"  # the class paths of the modules below
BATCHES = ["--data.batch_size=8", "--data.n=264"]  # 33 points to predict in 5 batches, the last one short
INDEX = [str(i) for i in range(33)]
ONE_BATCH = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=1", "--trainer.limit_val_batches=1"]
LAST = ["--ckpt_path=last", *BATCHES]  # the newest run's last.ckpt, its module the checkpoint's class


class Regression(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return self(batch[0])[:, 0]  # (N,)


class LabelAndProbability(TinyClassifier):
    """Asks for the columns it wants: a classifier's label and its probability, by name."""

    def predict_step(self, batch, batch_idx):
        probability, label = self(batch[0]).softmax(dim=1).max(dim=1)
        return {"label": label, "probability": probability}


class NaNRow(LabelAndProbability):
    """LabelAndProbability whose second batch's first row is NaN, as a diverged input's is."""

    def predict_step(self, batch, batch_idx):
        output = super().predict_step(batch, batch_idx)
        if batch_idx == 1:
            output["probability"][0] = float("nan")
        return output


class Several(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        logits = self(batch[0])  # (N, 3)
        return {"score": logits[:, 0], "logits": logits, "class": logits.argmax(dim=1)}


class Masks(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return self(batch[0])[:, None, :, None] * torch.arange(4.0)  # (N, 1, 3, 4)


class LargeAndSmall(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        logits = self(batch[0])
        return {"score": logits[:, 0], "embedding": logits.repeat(1, 10)}  # (N,), (N, 30)


class HalfPrecision(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return self(batch[0]).bfloat16()  # as 16-mixed precision returns them


class Twice(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return torch.cat([self(batch[0])] * 2)  # 2N rows


class AThird(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return self(batch[0])[::3]  # N / 3 rows


class ReturnsNone(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        self(batch[0])


class ReturnsStrings(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return ["cat"] * len(batch[0])


class Ragged(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return self(batch[0])[:, : 1 + batch_idx % 2]  # (N, 1), then (N, 2)


class TwiceOnRankOne(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return torch.cat([self(batch[0])] * (2 if self.global_rank == 1 else 1))


class Generator(L.LightningModule):
    """A GAN's generator as Lightning's docs write one: forward maps latents to points; predict_step draws its own
    latents, one per row of the batch (whose points it never reads)."""

    def __init__(self, latent: int = 8) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(latent, 16), nn.ReLU(), nn.Linear(16, 2))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)  # (N, latent) -> (N, 2)

    def predict_step(self, batch, batch_idx):
        z = torch.randn(len(batch[0]), self.hparams.latent, generator=torch.Generator().manual_seed(batch_idx))
        return self(z)


def predict(model: str, *args: str):
    """`python -m tiny_tasks predict --model <model>` (its initial weights), in this process."""
    return run("predict", f"--model={HERE}.{model}", *BATCHES, *args)


def expected(cli):
    """What the module returns for the points to predict, in their order."""
    model = cli.model.eval()
    with torch.no_grad():
        outputs = [model.predict_step(batch, i) for i, batch in enumerate(cli.datamodule.predict_dataloader())]
    if isinstance(outputs[0], dict):
        return {key: torch.cat([output[key] for output in outputs]) for key in outputs[0]}
    return torch.cat(outputs)


def folder(cli) -> Path:
    return Path(cli.trainer.logger.log_dir)


def written(path: Path) -> tuple[list[str], dict[str, list[str]]]:
    """A CSV's header and its columns."""
    with path.open(newline="") as file:
        header, *rows = list(csv.reader(file))
    return header, {column: [row[i] for row in rows] for i, column in enumerate(header)}


def floats(values: list[str]) -> torch.Tensor:
    return torch.tensor([float(value) for value in values])


def test_a_tensor_of_n_values_is_one_output_column_in_input_order(capsys):
    cli = predict("Regression")
    header, columns = written(folder(cli) / "predictions.csv")
    assert header == ["index", "output"] and columns["index"] == INDEX
    torch.testing.assert_close(floats(columns["output"]), expected(cli))
    assert f"Wrote 33 predictions to {folder(cli) / 'predictions.csv'}" in capsys.readouterr().out.splitlines()


def test_class_probabilities_are_columns_of_numbers_never_guessed_to_be_a_label():
    cli = run("predict", *BATCHES)  # TinyClassifier: softmax, (N, 3)
    header, columns = written(folder(cli) / "predictions.csv")
    assert header == ["index", "output_0", "output_1", "output_2"]
    torch.testing.assert_close(torch.stack([floats(columns[f"output_{j}"]) for j in range(3)], dim=1), expected(cli))


def test_a_module_that_wants_a_label_and_its_probability_returns_them_by_name():
    cli = predict("LabelAndProbability")
    header, columns = written(folder(cli) / "predictions.csv")
    assert header == ["index", "label", "probability"]
    outputs = expected(cli)
    assert [int(value) for value in columns["label"]] == outputs["label"].tolist()
    torch.testing.assert_close(floats(columns["probability"]), outputs["probability"])


def test_a_nan_row_changes_no_column_it_is_written_as_nan():
    cli = predict("NaNRow")
    header, columns = written(folder(cli) / "predictions.csv")
    assert header == ["index", "label", "probability"], "the columns of what predict_step returns, not of its values"
    assert columns["probability"][8] == "nan" and columns["index"] == INDEX  # batch 1's first row


def test_a_dict_is_one_column_group_per_key_named_by_it():
    cli = predict("Several")
    header, columns = written(folder(cli) / "predictions.csv")
    logits = [f"logits_{j}" for j in range(3)]
    assert header == ["index", "score", *logits, "class"]
    outputs = expected(cli)
    torch.testing.assert_close(floats(columns["score"]), outputs["score"])
    torch.testing.assert_close(torch.stack([floats(columns[c]) for c in logits], dim=1), outputs["logits"])
    assert [int(value) for value in columns["class"]] == outputs["class"].tolist()


def test_masks_go_to_an_npy_beside_the_csv_which_keeps_the_index(capsys):
    cli = predict("Masks")
    header, columns = written(folder(cli) / "predictions.csv")
    assert header == ["index"] and columns["index"] == INDEX
    torch.testing.assert_close(torch.from_numpy(np.load(folder(cli) / "predictions.npy")), expected(cli))
    said = f"Wrote 33 predictions to {folder(cli) / 'predictions.csv'} and {folder(cli) / 'predictions.npy'}"
    assert said in capsys.readouterr().out.splitlines()


def test_a_dicts_large_entries_go_to_an_npz_and_its_small_ones_to_the_csv():
    cli = predict("LargeAndSmall")
    header, columns = written(folder(cli) / "predictions.csv")
    assert header == ["index", "score"]
    outputs = expected(cli)
    torch.testing.assert_close(floats(columns["score"]), outputs["score"])
    with np.load(folder(cli) / "predictions.npz") as arrays:
        assert list(arrays) == ["embedding"]
        torch.testing.assert_close(torch.from_numpy(arrays["embedding"]), outputs["embedding"])


def test_bfloat16_outputs_are_written_as_floats():
    cli = predict("HalfPrecision")
    header, columns = written(folder(cli) / "predictions.csv")
    assert header == ["index", "output_0", "output_1", "output_2"]
    torch.testing.assert_close(floats(columns["output_0"]), expected(cli)[:, 0].float(), rtol=0, atol=0)


def test_a_generator_drawing_its_own_latents_is_written_one_row_per_input():
    cli = predict("Generator")
    header, columns = written(folder(cli) / "predictions.csv")
    assert header == ["index", "output_0", "output_1"] and columns["index"] == INDEX
    torch.testing.assert_close(floats(columns["output_1"]), expected(cli)[:, 1])


NOT_ONE_ROW = [
    ("Twice", "predict_step returned 16 rows of its output for a batch of 8 inputs; return one row per input"),
    ("AThird", "predict_step returned 3 rows of its output for a batch of 8 inputs; return one row per input"),
    ("ReturnsNone", "predict_step returned NoneType: PredictionWriter takes a tensor with one row per input"),
    ("ReturnsStrings", "predict_step returned list: PredictionWriter takes a tensor with one row per input"),
    ("Ragged", "predict_step returned outputs of other names or shapes in batch 1"),
]
ROW_REPEATS = {"AThird": "Twice", "ReturnsStrings": "ReturnsNone"}  # the row count's check, the type's


@pytest.mark.parametrize(("model", "said"), slow_repeats(NOT_ONE_ROW, [m for m, _ in NOT_ONE_ROW], ROW_REPEATS))
def test_an_output_that_is_not_one_row_per_input_is_one_line_and_no_file(model, said, capsys):
    error = refusal(capsys, lambda: predict(model))
    assert error.startswith(f"error: {said}"), error
    assert not list(Path().rglob("predictions*")), "no predictions file, not even a header"
    assert not list(Path().glob("runs/*/version_*")), "no run folder where nothing was written"


# Every day a name not ending in .csv and one with a folder; slow, other names not ending in .csv.
NAMES = ["preds.npy", "preds.npz", "preds", "", "sub/preds.csv", ".csv"]
NAME_REPEATS = dict.fromkeys(["preds.npz", "preds", "(empty)", ".csv"], "preds.npy")


@pytest.mark.parametrize("filename", slow_repeats(NAMES, [name or "(empty)" for name in NAMES], NAME_REPEATS))
def test_a_filename_that_is_not_a_csv_file_name_is_refused_before_a_run_folder_exists(filename, capsys):
    error = refusal(capsys, lambda: predict("Masks", f"--prediction_writer.filename={filename}"))
    assert error == f"error: PredictionWriter: filename {filename!r} must be a file name ending in .csv", error
    assert not Path("runs").exists() or not list(Path("runs").rglob("*.*"))


class NoPredictStep(TinyClassifier):
    """forward takes the points alone; Lightning's default predict_step hands it the whole batch, a list."""

    predict_step = L.LightningModule.predict_step  # Lightning's own: the module defines none


def test_a_module_without_predict_step_whose_forward_cannot_take_a_batch_is_one_line(capsys):
    error = refusal(capsys, lambda: predict("NoPredictStep"))
    assert error.startswith("error: NoPredictStep has no predict_step, and Lightning's default, forward(batch), failed"
                            " on a batch (AttributeError: "), error  # fmt: skip
    assert error.endswith("define predict_step"), error
    assert not list(Path().rglob("predictions*")), "no predictions file"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A run of a model trained on one batch, fitted once a module for each model and copied into the test's runs/:
    predicts of its checkpoint write into its folder, runs/tiny/version_0."""
    made: dict[str, Path] = {}

    def copy(model: str) -> Path:
        if model not in made:
            home = tmp_path_factory.mktemp(model)
            with pytest.MonkeyPatch.context() as patch:
                patch.chdir(home)
                run("fit", f"--model={HERE}.{model}", *BATCHES, *ONE_BATCH)
            made[model] = home / "runs"
        shutil.copytree(made[model], "runs")
        return Path("runs/tiny/version_0")

    return copy


@pytest.mark.parametrize("model", ["Masks", "LargeAndSmall", "Regression"])  # .csv and .npy, .csv and .npz, .csv
def test_a_second_predict_into_the_same_run_writes_a_pair_of_its_own_and_keeps_the_first(fitted, model):
    run_dir = fitted(model)
    run("predict", *LAST)
    before = snapshot()
    run("predict", *LAST)
    new = {Path(path).name for path in assert_kept(before, snapshot()) if "predictions" in path}
    firsts = {Path(path).name for path in before if "predictions" in path}
    assert new == {name.replace("predictions", "predictions-1") for name in firsts} and len(new) == len(firsts)
    assert (run_dir / "predictions-1.csv").is_file(), "into the run of the checkpoint"


def test_an_array_left_without_its_csv_is_not_paired_with_a_new_csv(fitted):
    run_dir = fitted("Masks")
    (run_dir / "predictions.npz").write_bytes(b"an earlier predict's arrays, its CSV deleted")
    run("predict", *LAST)  # a CSV and an .npy: predictions.csv would look like the .npz's pair
    assert sorted(path.name for path in run_dir.glob("predictions*")) == [
        "predictions-1.csv",
        "predictions-1.npy",
        "predictions.npz",
    ]


def test_a_sigterm_while_predicting_writes_nothing_and_leaves_no_run_folder(capsys):
    with pytest.raises(SystemExit) as stop:
        run("predict", *BATCHES, callbacks=[SignalAt(phase="predict")])
    assert stop.value.code == 128 + signal.SIGTERM
    assert "Wrote" not in capsys.readouterr().out
    assert not list(Path().rglob("predictions*")) and not list(Path().glob("runs/*/version_*"))


def test_a_sigterm_between_the_array_and_the_csv_writes_both_says_so_and_keeps_them(monkeypatch, capsys):
    """The files are written once every row is known; a SIGTERM then waits for the pair, which is said and kept, in
    the new run folder of a predict (a stop before any output leaves none)."""
    writes = []

    def write_then_sigterm(path, content):
        prediction_writer_write(path, content)
        writes.append(Path(path).name)
        if len(writes) == 1:
            os.kill(os.getpid(), signal.SIGTERM)

    prediction_writer_write = prediction_writer.write_atomically
    monkeypatch.setattr(prediction_writer, "write_atomically", write_then_sigterm)
    with pytest.raises(SystemExit) as stop:
        predict("Masks")
    assert stop.value.code == 128 + signal.SIGTERM and writes == ["predictions.npy", "predictions.csv"]
    run_dir = Path("runs/tiny/version_0")
    said = f"Wrote 33 predictions to {run_dir / 'predictions.csv'} and {run_dir / 'predictions.npy'}"
    out, err = capsys.readouterr()
    assert said in out.splitlines() and "stopped by SIGTERM once the predictions were written" in err
    assert written(run_dir / "predictions.csv")[1]["index"] == INDEX


DDP = ["--trainer.strategy=ddp", "--trainer.devices=2"]


@pytest.mark.slow
def test_two_ddp_ranks_write_one_file_in_input_order_like_one_process():
    """Lightning's launcher starts the second rank by running the command again: a process of its own, not pytest.
    Lightning's own predict sampler gives rank r the points r, r + 2, ...: 17 and 16 rows, interleaved back."""
    ddp = command("predict", *QUIET, *BATCHES, f"--model={HERE}.Regression", *DDP)
    assert ddp.returncode == 0, ddp.stderr[-3000:]
    single = predict("Regression")  # version_1
    header, columns = written(Path("runs/tiny/version_0/predictions.csv"))
    assert header == ["index", "output"] and columns["index"] == INDEX
    torch.testing.assert_close(
        floats(columns["output"]), floats(written(folder(single) / "predictions.csv")[1]["output"])
    )


@pytest.mark.slow
def test_a_refusal_on_one_rank_is_said_once_in_its_words_and_nothing_is_written():
    refused = command("predict", *QUIET, *BATCHES, f"--model={HERE}.TwiceOnRankOne", *DDP)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr[-3000:]
    assert errors == [
        "error: predict_step returned 16 rows of its output for a batch of 8 inputs; return one row per input"
    ]
    assert not list(Path().rglob("predictions*")) and not list(Path().glob("runs/*/version_*"))
