"""The example's data files (project/files.py, project/data.py's FileDataModule): garbage in is refused where it is
read, in one line naming the file and the problem, never turned into output (issue 13, item 3); a file to predict
needs the checkpoint, not the training data. A checkpoint with NaN weights is the library's to refuse:
lightning-runs/tests/test_checkpoint_refusals.py."""

import io
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from lightning_runs.errors import main

from project.data import DigitsDataModule, FileDataModule

from support import assert_kept, refusal, run, slow_repeats, snapshot, working_directory

PREDICTIONS = ("predictions.csv", "predictions-1.csv")  # the second predict's file: nothing is overwritten
SHORT = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2"]
OWN_DATA = ["--data=project.data.FileDataModule", "--data.path=own.npz", "--name=own"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """runs/ holding a briefly trained run of the digits (runs/digits/version_0) and one of a three-class file of
    your own (runs/own/version_0), whose file is gone since."""
    home = tmp_path_factory.mktemp("trained")
    with working_directory(home):
        run("fit", *SHORT)
        images, labels = digits()
        np.savez("own.npz", images=images[labels < 3], labels=labels[labels < 3])
        run("fit", *SHORT, *OWN_DATA)
        Path("own.npz").unlink()
    return home / "runs"


@pytest.fixture
def runs(trained) -> Path:
    shutil.copytree(trained, "runs")
    return Path("runs")


def digits() -> tuple[np.ndarray, np.ndarray]:
    images, labels = DigitsDataModule().load()
    return images.numpy(), labels.numpy()


def write(name: str, content) -> str:
    """`content` as the file `name`: an array saved by numpy, text, or the bytes of a .npy (in a .npz: its samples)."""
    if isinstance(content, str):
        Path(name).write_text(content)
    elif isinstance(content, bytes) and name.endswith(".npz"):
        with zipfile.ZipFile(name, "w") as archive:
            archive.writestr("samples.npy", content)
    elif isinstance(content, bytes):
        Path(name).write_bytes(content)
    elif name.endswith(".npz"):
        np.savez(name, **content)
    else:
        np.save(name, content, allow_pickle=True)
    return name


def claiming(shape: tuple[int, ...]) -> bytes:
    """A .npy of two 8x8 images whose header claims `shape`: numpy allocates what the header says before reading."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return buffer.getvalue() + np.zeros((2, 8, 8), dtype=np.float32).tobytes()


IMAGES = digits()[0][:5]
LIES = "claims an array of shape (1000000000, 8, 8) (float32, 256,000,000,000 bytes) but only 512 bytes follow it"
NAN = IMAGES.copy()
NAN[3, 2, 2] = np.nan
INF_CSV = "\n".join(",".join(["1"] * 63 + [v]) for v in ("2", "inf")) + "\n"
# predict: file name, its content, what the one line says.
PREDICT_FILES = [
    # Samples of another shape than the checkpoint's model takes: both shapes named.
    ("mnist.npy", np.zeros((4, 28, 28), dtype=np.float32), "samples of shape (28, 28), expected (8, 8)"),
    ("wide.npy", np.zeros((10, 32), dtype=np.float32), "samples of shape (32,), expected (8, 8) (or 64 values a row)"),
    ("nan.npy", NAN, "1 samples hold NaN or infinite values (the first: sample 3)"),
    ("inf.csv", INF_CSV, "NaN or infinite values (the first: sample 1)"),
    ("huge.npy", np.full((2, 8, 8), 1e300), "NaN or infinite values"),  # infinite as float32
    ("empty.csv", "", "no rows of numbers in the file"),
    ("header.csv", ",".join(f"p{i}" for i in range(64)) + "\n", "no rows of numbers in the file"),
    ("text.csv", "a,b,c\nd,e,f\n" * 2, "not a readable .csv file"),
    # A first row of numbers with an empty cell is a row with a gap, not a header to skip (it lost a sample).
    ("gap.csv", "," + INF_CSV[2:].replace("inf", "2"), "not a readable .csv file (could not convert string ''"),
    ("objects.npy", np.array([{"a": 1}, None], dtype=object), "not a readable .npy file"),
    ("strings.npy", np.array([["1"] * 64] * 2), "expected values as numbers, got <U1"),
    ("complex.npy", np.ones((2, 8, 8), dtype=np.complex64), "expected values as numbers"),
    ("no_samples.npz", {"pixels": IMAGES}, "no array named samples"),
    ("digits.txt", "1,2,3\n", "unsupported file type '.txt'"),
    ("missing.npy", None, "missing.npy: no such file"),
    # 238 GiB asked of the allocator for a 640-byte file (issue 31, item 5)
    ("claims.npy", claiming((10**9, 8, 8)), f"its header {LIES}"),
    ("claims.npz", claiming((10**9, 8, 8)), f"the header of its samples.npy {LIES}"),
]


# Every day one case per check of project/files.py: a sample's shape, non-finite values (and float64 beyond float32),
# a .csv's header, a row with a gap, no rows, an unreadable .npy, values that are no numbers, a missing array or file,
# a file type, a header that lies (.npy, and .npz's members). Slow: a check again, on another file or value.
PREDICT_REPEATS = {
    "wide.npy": "mnist.npy",
    "inf.csv": "nan.npy",
    "empty.csv": "header.csv",
    "text.csv": "gap.csv",
    "complex.npy": "strings.npy",
}


@pytest.mark.parametrize(
    "name,content,expected", slow_repeats(PREDICT_FILES, [c[0] for c in PREDICT_FILES], PREDICT_REPEATS)
)
def test_predicting_a_bad_file_is_refused_in_one_line_naming_it(name, content, expected, capsys):
    """The DataModule's predict setup, which `predict` runs, under the command's error handling: each check's line.
    The whole command on a digits run, the shape it takes read from the checkpoint: the test below."""
    path = name if content is None else write(name, content)
    error = refusal(capsys, lambda: main(lambda: DigitsDataModule(predict_path=path).setup("predict")))
    assert error.startswith(f"error: {name}: ") and expected in error


# The file is read in the DataModule's setup, after Lightning's own setup hook has opened the run's TensorBoard writer
# (trainer/call.py, _call_setup_hook): the refusal removes what the command added to the run.
def test_predicting_a_bad_file_writes_nothing_into_the_run(runs, capsys):
    write("mnist.npy", PREDICT_FILES[0][1])
    before = snapshot()
    error = refusal(capsys, lambda: run("predict", "--ckpt_path=best", "--data.predict_path=mnist.npy"))
    assert error.startswith("error: mnist.npy: ") and PREDICT_FILES[0][2] in error
    assert not assert_kept(before, snapshot()), "no config, events or predictions in the run"


# The run's config.yaml gives FileDataModule its path alone (num_classes and sample_shape null, read from the file);
# the checkpoint's datamodule_hyper_parameters hold both, and an evaluation of the run takes them from there.
def test_predicting_a_file_needs_the_checkpoint_but_not_the_training_data(runs):
    write("new.npy", IMAGES)
    checkpoint = runs / "own/version_0/checkpoints/best.ckpt"
    assert not Path("own.npz").exists()
    predicted = run("predict", f"--ckpt_path={checkpoint}", "--data.predict_path=new.npy")
    rows = (runs / "own/version_0/predictions.csv").read_text().splitlines()
    assert predicted.model.hparams.num_classes == 3 and len(rows) == 1 + len(IMAGES)
    assert {int(row.split(",")[1]) for row in rows[1:]} <= {0, 1, 2}


def test_predicting_a_csv_that_starts_with_a_byte_order_mark_writes_one_prediction_per_row_in_its_order(runs):
    rows = "\n".join(",".join(f"{v:g}" for v in image.reshape(-1)) for image in IMAGES)
    Path("rows.csv").write_text("\ufeff" + rows + "\n")  # Excel's "CSV UTF-8"; the first row was taken for a header
    write("rows.npy", IMAGES)
    run("predict", "--ckpt_path=best", "--data.predict_path=rows.csv")
    run("predict", "--ckpt_path=best", "--data.predict_path=rows.npy")
    from_csv, from_npy = ((runs / "digits/version_0" / name).read_text().splitlines() for name in PREDICTIONS)
    assert len(from_csv) == 1 + len(IMAGES) and from_csv == from_npy  # every row, each index its own


# Your own data for training: file name, its arrays, what the one line says.
LABELS = np.arange(5) % 3
TRAIN_FILES = [
    ("huge_label.npz", {"images": IMAGES, "labels": np.array([0, 1, 2, 1, 10**9])}, "label 1000000000 would make"),
    ("nan_pixels.npz", {"images": NAN, "labels": LABELS}, "NaN or infinite values"),
    ("negative.npz", {"images": IMAGES, "labels": LABELS - 1}, "labels must be the integers 0, 1, 2, ..."),
    ("fraction.npz", {"images": IMAGES, "labels": LABELS + 0.5}, "labels must be the integers 0, 1, 2, ..."),
    ("nan_label.npz", {"images": IMAGES, "labels": np.array([0, 1, np.nan, 1, 0])}, "labels must be the integers"),
    ("short.npz", {"images": IMAGES, "labels": LABELS[:3]}, "5 samples but 3 labels"),
    ("objects.npz", {"images": np.array([None] * 5, dtype=object), "labels": LABELS}, "not a readable .npz file"),
    ("scalars.npz", {"samples": np.zeros(5), "labels": LABELS}, "expected N samples, an array of shape (N, ...)"),
    ("no_labels.npz", {"images": IMAGES}, "no array named labels"),
    ("one_column.csv", "1\n0\n", "expected a sample's values, then its label, on each row"),
    ("empty.csv", "", "no rows of numbers in the file"),
]


# Every day one case per check of load_labelled: each label check, a sample check, the .npz and .csv readers' own.
# Slow: fraction.npz, the integer check negative.npz takes, with other values.
@pytest.mark.parametrize(
    "name,content,expected", slow_repeats(TRAIN_FILES, [c[0] for c in TRAIN_FILES], {"fraction.npz": "negative.npz"})
)
def test_training_on_a_bad_file_of_your_own_is_refused_before_any_run_folder_exists(name, content, expected, capsys):
    """FileDataModule built as `fit` builds it, before its Trainer, under the command's error handling: each check's
    line. The whole command, and that it leaves no run folder: the test below."""
    write(name, content)
    error = refusal(capsys, lambda: main(lambda: FileDataModule(path=name)))
    assert error.startswith(f"error: {name}: ") and expected in error


def test_fit_on_a_bad_file_of_your_own_says_one_line_and_leaves_no_run_folder(capsys):
    name, content, expected = TRAIN_FILES[0]
    write(name, content)
    before = snapshot()
    error = refusal(capsys, lambda: run("fit", *SHORT, "--data=project.data.FileDataModule", f"--data.path={name}"))
    assert error.startswith(f"error: {name}: ") and expected in error
    assert not assert_kept(before, snapshot()) and not Path("runs").exists()
