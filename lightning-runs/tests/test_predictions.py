"""`python -m <package> predict` writes what the model's `predict_step` returns, whatever it is, one row per input in
the input's order: run in this process on the tiny task, each test with a module of its own returning one kind of
output, the written files read back and compared with the model's own outputs."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from lightning_runs.errors import main
from lightning_runs.folders.layout import free_path
from tiny_tasks import TRAINER_DEFAULTS, TinyClassifier, TinyCLI, TinyDataModule

QUIET = ["--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"]
BATCHES = ["--data.batch_size=8", "--data.n=264"]  # 33 samples to predict in 5 batches, the last one short


class Regression(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return self(batch[0])[:, 0]  # (N,)


class Embeddings(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return self(batch[0])  # (N, 3) logits: not probabilities


class Several(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        logits = self(batch[0])  # (N, 3)
        return {"score": logits[:, 0], "logits": logits, "class": logits.argmax(dim=1), "p": logits.softmax(dim=1)}


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


class ReturnsNone(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        self(batch[0])


class ReturnsStrings(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return ["cat"] * len(batch[0])


class Ragged(TinyClassifier):
    def predict_step(self, batch, batch_idx):
        return self(batch[0])[:, : 1 + batch_idx % 2]  # (N, 1), then (N, 2)


def predict(model: type, *args: str) -> TinyCLI:
    """`python -m <package> predict` of `model` (its initial weights), in this process."""
    args = ["predict", *QUIET, *BATCHES, *args]
    return main(lambda: TinyCLI(model, TinyDataModule, trainer_defaults=TRAINER_DEFAULTS, args=args))


def expected(cli: TinyCLI):
    """What the model returns for the samples to predict, in their order."""
    model = cli.model.eval()
    with torch.no_grad():
        outputs = [model.predict_step(batch, i) for i, batch in enumerate(cli.datamodule.predict_dataloader())]
    if isinstance(outputs[0], dict):
        return {key: torch.cat([output[key] for output in outputs]) for key in outputs[0]}
    return torch.cat(outputs)


def written(cli: TinyCLI, name: str = "predictions.csv") -> tuple[list[str], dict[str, list[str]]]:
    """The CSV's header and its columns."""
    with (Path(cli.trainer.logger.log_dir) / name).open(newline="") as file:
        header, *rows = list(csv.reader(file))
    return header, {column: [row[i] for row in rows] for i, column in enumerate(header)}


def floats(values: list[str]) -> torch.Tensor:
    return torch.tensor([float(value) for value in values])


INDEX = [str(i) for i in range(33)]


def test_a_regressions_n_values_are_one_value_column():
    cli = predict(Regression)
    header, columns = written(cli)
    assert header == ["index", "value"] and columns["index"] == INDEX
    torch.testing.assert_close(floats(columns["value"]), expected(cli))


def test_outputs_that_are_not_probabilities_are_output_columns_never_called_probability():
    cli = predict(Embeddings)
    header, columns = written(cli)
    assert header == ["index", "output_0", "output_1", "output_2"]
    torch.testing.assert_close(torch.stack([floats(columns[f"output_{j}"]) for j in range(3)], dim=1), expected(cli))


def test_class_probabilities_are_the_label_and_its_probability():
    cli = predict(TinyClassifier)  # softmax
    header, columns = written(cli)
    assert header == ["index", "label", "probability"] and columns["index"] == INDEX
    probability, label = expected(cli).max(dim=1)
    assert [int(value) for value in columns["label"]] == label.tolist()
    torch.testing.assert_close(floats(columns["probability"]), probability)


def test_a_dict_is_one_column_group_per_key_named_by_it():
    cli = predict(Several)
    header, columns = written(cli)
    logits = [f"logits_{j}" for j in range(3)]
    assert header == ["index", "score", *logits, "class", "p_label", "p_probability"]
    outputs = expected(cli)
    torch.testing.assert_close(floats(columns["score"]), outputs["score"])
    torch.testing.assert_close(torch.stack([floats(columns[c]) for c in logits], dim=1), outputs["logits"])
    assert [int(value) for value in columns["class"]] == outputs["class"].tolist()
    assert [int(value) for value in columns["p_label"]] == outputs["p"].argmax(dim=1).tolist()


def test_masks_go_to_an_npy_beside_the_csv_which_keeps_the_index(capsys):
    cli = predict(Masks)
    folder = Path(cli.trainer.logger.log_dir)
    header, columns = written(cli)
    assert header == ["index"] and columns["index"] == INDEX
    torch.testing.assert_close(torch.from_numpy(np.load(folder / "predictions.npy")), expected(cli))
    said = f"Wrote 33 predictions to {folder / 'predictions.csv'} and {folder / 'predictions.npy'}"
    assert said in capsys.readouterr().out.splitlines()


def test_a_dicts_large_entries_go_to_an_npz_and_its_small_ones_to_the_csv():
    cli = predict(LargeAndSmall)
    header, columns = written(cli)
    assert header == ["index", "score"]
    outputs = expected(cli)
    torch.testing.assert_close(floats(columns["score"]), outputs["score"])
    with np.load(Path(cli.trainer.logger.log_dir) / "predictions.npz") as arrays:
        assert list(arrays) == ["embedding"]
        torch.testing.assert_close(torch.from_numpy(arrays["embedding"]), outputs["embedding"])


def test_bfloat16_outputs_are_written_as_floats():
    cli = predict(HalfPrecision)
    header, columns = written(cli)
    assert header == ["index", "output_0", "output_1", "output_2"]
    torch.testing.assert_close(floats(columns["output_0"]), expected(cli)[:, 0].float(), rtol=0, atol=0)


@pytest.mark.parametrize(
    ("model", "said"),
    [
        (ReturnsNone, "predict_step returned None for batch 0; predict writes a tensor with one row per sample"),
        (ReturnsStrings, "predict_step returned a list of 8 str for batch 0; "),
        (Ragged, "returned a tensor of shape (N, 1), float32 for batch 0 and a tensor of shape (N, 2), float32 for"),
    ],
)
def test_an_output_it_cannot_write_is_refused_in_one_line_and_no_file_is_written(model, said, capsys):
    with pytest.raises(SystemExit) as exit_:
        predict(model)
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert exit_.value.code == 2 and len(errors) == 1 and "Traceback" not in err, err[-2000:]
    assert said in errors[0]
    assert not list(Path().rglob("predictions*")), "no predictions file, not even a header"


def test_the_next_free_name_is_free_for_the_csv_and_the_array_beside_it(tmp_path):
    (tmp_path / "predictions.npy").touch()  # its CSV deleted: predictions.csv alone would pair with someone else's
    assert free_path(tmp_path / "predictions.csv", ".npy") == tmp_path / "predictions-1.csv"
    assert free_path(tmp_path / "predictions.csv") == tmp_path / "predictions.csv"


DDP = """
from lightning_runs.errors import main
from test_predictions import BATCHES, QUIET, Regression
from tiny_tasks import TRAINER_DEFAULTS, TinyCLI, TinyDataModule

args = ["predict", *QUIET, *BATCHES, "--trainer.strategy=ddp", "--trainer.devices=2"]
main(lambda: TinyCLI(Regression, TinyDataModule, trainer_defaults=TRAINER_DEFAULTS, args=args))
"""


@pytest.mark.slow
def test_two_ddp_ranks_write_one_file_in_input_order_like_one_process(tmp_path):
    """Lightning's launcher starts the second rank by running the same command again: a script, not pytest."""
    (tmp_path / "ddp.py").write_text(DDP)
    tests = str(Path(__file__).parent)
    path = os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    command = [sys.executable, "ddp.py"]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    single = predict(Regression)  # version_1, beside the DDP run's version_0
    header, columns = written(single)
    ddp_header, ddp_columns = written(single, "../version_0/predictions.csv")
    assert ddp_header == header == ["index", "value"] and ddp_columns["index"] == INDEX  # 17 + 16 rows interleaved
    torch.testing.assert_close(floats(ddp_columns["value"]), floats(columns["value"]))
