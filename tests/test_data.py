"""The split, the normalization statistics and the in-memory batches, for the digits and for your own files."""

import re

import numpy as np
import pytest
import torch

from lightning_runs.data.batches import ShardSampler, TensorBatches

from project import files
from project.data import DigitsDataModule, FileDataModule, statistics
from project.files import load_labelled, load_samples


def prepared(**kwargs) -> DigitsDataModule:
    datamodule = DigitsDataModule(**kwargs)
    datamodule.setup("fit")
    return datamodule


def test_split_is_disjoint_complete_and_80_10_10():
    indices = DigitsDataModule().split(1797)
    sets = {name: set(idx.tolist()) for name, idx in indices.items()}
    assert not (sets["train"] & sets["val"] or sets["train"] & sets["test"] or sets["val"] & sets["test"])
    assert sets["train"] | sets["val"] | sets["test"] == set(range(1797))
    assert (len(sets["train"]), len(sets["val"]), len(sets["test"])) == (1437, 180, 180)


def test_the_seed_decides_the_split():
    same = [DigitsDataModule(seed=3).split(1797)["test"] for _ in range(2)]
    other = DigitsDataModule(seed=4).split(1797)["test"]
    assert torch.equal(*same)
    assert not torch.equal(same[0], other)


def test_fractions_are_arguments():
    indices = DigitsDataModule(val_fraction=0.2, test_fraction=0.3).split(1000)
    assert (len(indices["val"]), len(indices["test"]), len(indices["train"])) == (200, 300, 500)


def test_normalization_uses_train_statistics_only():
    datamodule = prepared(seed=1)
    train_images = datamodule.splits["train"][0]
    all_images, _ = datamodule.load()
    assert datamodule.mean.item() == pytest.approx(train_images.mean().item())  # one value for grey images
    assert datamodule.std.item() == pytest.approx(train_images.std().item())
    assert datamodule.mean.item() != pytest.approx(all_images.mean().item(), abs=1e-4)


def test_statistics_are_per_channel_of_images_and_signals_and_per_feature_of_tables():
    scales = torch.tensor([1.0, 10.0, 1000.0])
    images = torch.randn(50, 3, 4, 4) * scales[:, None, None] + scales[:, None, None]  # (N, C, H, W)
    mean, std = statistics(images, "image")
    assert mean.shape == std.shape == (3, 1, 1)
    torch.testing.assert_close(mean.flatten(), images.mean(dim=(0, 2, 3)))
    signals = images.flatten(2)  # (N, C, L)
    assert statistics(signals, "signal")[0].shape == (3, 1)
    table = images[:, :, 0, 0]  # (N, F) features on scales 1 to 1000
    mean, std = statistics(table, "table")
    assert mean.shape == (3,)
    torch.testing.assert_close(((table - mean) / std).std(dim=0), torch.ones(3))
    constant = torch.ones(10, 2)
    assert torch.equal(statistics(constant, "table")[1], torch.ones(2)), "a constant feature is not divided by zero"


def test_train_batches_cover_the_split_in_a_new_order_every_epoch():
    datamodule = prepared(batch_size=64)
    loader = datamodule.train_dataloader()
    first = torch.cat([labels for _, labels in loader])
    loader.sampler.set_epoch(1)
    second = torch.cat([labels for _, labels in loader])
    train = len(datamodule.splits["train"][1])
    assert len(loader) == train // 64 and len(first) == 64 * (train // 64)  # the ragged last batch is dropped
    assert not torch.equal(first, second)
    images, labels = next(iter(loader))
    assert images.shape == (64, 8, 8) and images.dtype == torch.float32 and labels.dtype == torch.long


def test_evaluation_shards_score_every_sample_exactly_once_across_ranks():
    tensors = (torch.arange(181),)  # not divisible by the world size
    shards = [TensorBatches(tensors, 16, ShardSampler(181, shuffle=False, rank=r, world_size=2)) for r in range(2)]
    seen = torch.cat([batch[0] for shard in shards for batch in shard])
    assert sorted(seen.tolist()) == list(range(181))


def test_training_shards_are_equal_so_every_rank_steps_equally_often():
    samplers = [ShardSampler(181, shuffle=True, seed=0, rank=r, world_size=2) for r in range(2)]
    first, second = (s.indices() for s in samplers)
    assert len(first) == len(second) == 91
    assert set(first.tolist()) | set(second.tolist()) == set(range(181))


def test_a_loader_resumes_at_the_batch_after_the_saved_position():
    batches = TensorBatches((torch.arange(100),), 10, ShardSampler(100, shuffle=True, seed=5), drop_last=True)
    uninterrupted = [b[0] for b in batches]
    iterator = iter(batches)
    for _ in range(4):
        next(iterator)
    state = batches.state_dict()
    resumed = TensorBatches((torch.arange(100),), 10, ShardSampler(100, shuffle=True, seed=5), drop_last=True)
    resumed.load_state_dict(state)
    assert [b[0].tolist() for b in resumed] == [b.tolist() for b in uninterrupted[4:]]


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".csv"])
def test_predict_reads_raw_samples_of_the_models_shape_from_a_file(tmp_path, suffix):
    images = np.random.default_rng(0).integers(0, 17, (7, 8, 8)).astype(np.float32)
    path = tmp_path / f"digits{suffix}"
    if suffix == ".npy":
        np.save(path, images)
    elif suffix == ".npz":
        np.savez(path, samples=images)
    else:
        np.savetxt(path, images.reshape(7, 64), delimiter=",")  # rows of 64 values, reshaped to the model's (8, 8)
    torch.testing.assert_close(load_samples(path, (8, 8)), torch.from_numpy(images))


def test_a_file_of_the_wrong_shape_is_refused_naming_both_shapes(tmp_path):
    np.save(tmp_path / "bad.npy", np.zeros((3, 10)))
    with pytest.raises(ValueError, match=r"samples of shape \(10,\), expected \(8, 8\)"):
        load_samples(tmp_path / "bad.npy", (8, 8))


def write_digits(path, digits: DigitsDataModule) -> None:
    """The digits as a user's own file: .npz with `images` and `labels`, or a CSV of 64 pixels then the label."""
    images, labels = digits.load()
    if path.suffix == ".npz":
        np.savez(path, images=images.numpy(), labels=labels.numpy())
    else:
        rows = np.column_stack([images.reshape(-1, 64).numpy().astype(int), labels.numpy()])
        header = ",".join([f"pixel_{i}" for i in range(64)] + ["label"])
        np.savetxt(path, rows, delimiter=",", fmt="%d", header=header, comments="")


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_your_own_file_gets_the_same_split_statistics_and_batches_as_the_digits(tmp_path, suffix):
    digits = prepared(seed=2, batch_size=32)
    write_digits(tmp_path / f"mine{suffix}", digits)
    # A CSV's rows are 64 features until told they are 8x8 images.
    shape = (8, 8) if suffix == ".csv" else None
    mine = FileDataModule(str(tmp_path / f"mine{suffix}"), seed=2, batch_size=32, sample_shape=shape)
    mine.setup("fit")
    assert mine.num_classes == digits.num_classes == 10
    for name in ("train", "val", "test"):
        for theirs, ours in zip(digits.splits[name], mine.splits[name], strict=True):
            torch.testing.assert_close(ours, theirs)
    assert mine.sample_kind == "image"
    torch.testing.assert_close((mine.mean, mine.std), (digits.mean, digits.std))
    torch.testing.assert_close(next(iter(mine.train_dataloader())), next(iter(digits.train_dataloader())))


def test_the_class_count_comes_from_the_labels(tmp_path):
    np.savez(tmp_path / "three.npz", images=np.zeros((30, 64)), labels=np.arange(30) % 3)
    assert FileDataModule(str(tmp_path / "three.npz")).num_classes == 3


@pytest.mark.parametrize(
    "arrays,message",
    [
        ({"images": np.zeros((4, 8, 8))}, "no array named labels"),
        ({"images": np.zeros((4, 8, 8)), "labels": [0, 1, 2]}, "4 samples but 3 labels"),
        ({"samples": np.zeros((4, 8, 8)), "labels": [0, 1, 0.5, 1]}, "labels must be the integers"),
        ({"samples": np.zeros(4), "labels": [0, 1, 0, 1]}, r"expected N samples, .*got \(4,\)"),
    ],
)
def test_a_file_that_is_not_labelled_samples_is_refused_with_the_reason(tmp_path, arrays, message):
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=message):
        FileDataModule(str(tmp_path / "bad.npz"))


def test_a_csv_is_features_then_a_label_and_its_width_gives_the_feature_count(tmp_path):
    features = np.random.default_rng(0).normal(size=(30, 5))
    np.savetxt(tmp_path / "table.csv", np.c_[features, np.arange(30) % 2], delimiter=",")
    table = FileDataModule(str(tmp_path / "table.csv"))
    assert (table.sample_shape, table.sample_kind, table.num_classes) == ((5,), "table", 2)
    np.savetxt(tmp_path / "bad.csv", np.zeros((3, 1)), delimiter=",")
    with pytest.raises(ValueError, match="a sample's values, then its label"):
        FileDataModule(str(tmp_path / "bad.csv"))


# A CSV's first line and whether it is a header: one is only if a cell is text. Rows 2 and 3 are "3,4,1" and "5,6,0".
FIRST_LINES = [
    ("x1,x2,label", "header"),
    ('"x1","x2","label"', "header"),
    (",x2,label", "header"),  # pandas' to_csv: an unnamed index column
    ("\ufeffx1,x2,label", "header"),  # a byte order mark (Excel's "CSV UTF-8") before the header
    ("\ufeff1,2,1", "a row"),  # ... or before the first row: it is no text of the cell
    ("1,2,1", "a row"),
    (" 1 , 2 ,1", "a row"),
    ("1e3,-2.5,1", "a row"),
    ("nan,2,1", "a row"),  # read, then refused as NaN
]


@pytest.mark.parametrize("first,kind", FIRST_LINES, ids=[line for line, _ in FIRST_LINES])
def test_a_csvs_first_line_is_a_header_only_if_a_cell_is_text_and_every_other_row_is_read(tmp_path, first, kind):
    path = tmp_path / "table.csv"
    path.write_bytes(f"{first}\n3,4,1\n5,6,0\n".encode())
    if first.startswith("nan"):
        with pytest.raises(ValueError, match="NaN or infinite values"):
            load_labelled(path)
        return
    samples, labels = load_labelled(path)
    assert len(samples) == (2 if kind == "header" else 3)
    torch.testing.assert_close(samples[-2:], torch.tensor([[3.0, 4.0], [5.0, 6.0]]))
    assert labels.tolist()[-2:] == [1, 0]


def test_a_first_row_of_numbers_with_an_empty_cell_is_refused_not_skipped_as_a_header(tmp_path):
    (tmp_path / "gap.csv").write_text(",2,1\n3,4,1\n")
    with pytest.raises(
        ValueError, match=re.escape("gap.csv: not a readable .csv file (could not convert string '' to float")
    ):
        load_labelled(tmp_path / "gap.csv")


def test_a_csv_of_more_rows_or_classes_than_the_limits_is_refused_without_reading_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_ROWS", 3)  # 10 million in files.py
    (tmp_path / "long.csv").write_text("1,0\n" * 4 + "oops\n")  # the fifth row is never parsed
    with pytest.raises(ValueError, match=re.escape("long.csv: more than 3 rows, the most a file may hold")):
        load_samples(tmp_path / "long.csv")
    monkeypatch.setattr(files, "MAX_CLASSES", 2)
    (tmp_path / "many.csv").write_text("1,0\n2,1\n3,2\n")
    with pytest.raises(
        ValueError, match=re.escape("many.csv: label 2 would make more than 2 classes, the most accepted")
    ):
        load_labelled(tmp_path / "many.csv")


def test_samples_shaped_like_a_signals_channels_are_taken_for_images_and_it_says_how_to_tell(tmp_path, capsys):
    samples = np.random.default_rng(0).normal(size=(40, 3, 128))  # distinct: a repeated sample is kept once
    np.savez(tmp_path / "channels.npz", samples=samples, labels=np.arange(40) % 2)
    FileDataModule(str(tmp_path / "channels.npz"), batch_size=8).setup("fit")
    assert "Samples of shape (3, 128) are taken for images; --data.kind signal" in capsys.readouterr().out
    FileDataModule(str(tmp_path / "channels.npz"), batch_size=8, kind="signal").setup("fit")
    assert "taken for images" not in capsys.readouterr().out


def test_a_sample_repeated_in_a_csv_is_kept_once_so_no_copy_is_both_trained_and_tested_on(tmp_path, capsys):
    rows = np.c_[np.random.default_rng(0).normal(size=(40, 5)), np.arange(40) % 2]
    np.savetxt(tmp_path / "table.csv", np.r_[rows, rows[:20]], delimiter=",")  # 20 rows twice: a join gone wrong
    table = FileDataModule(str(tmp_path / "table.csv"), batch_size=8, val_fraction=0.2, test_fraction=0.2)
    table.setup("fit")
    assert sum(len(table.splits[name][0]) for name in ("train", "val", "test")) == 40, "each sample once"
    trained = {tuple(sample.tolist()) for sample in table.splits["train"][0]}
    assert not trained & {tuple(sample.tolist()) for sample in table.splits["test"][0]}
    assert "table.csv: 20 repeated samples (the same values and label) kept once each" in capsys.readouterr().out


def test_a_fit_resumed_on_a_file_rewritten_at_the_same_path_is_refused_in_one_line(tmp_path, capsys):
    from helpers import refusal, run

    generator = np.random.default_rng(0)
    path = tmp_path / "points.npz"
    np.savez(path, samples=generator.normal(size=(50, 4)), labels=np.arange(50) % 2)
    stop = ["--trainer.callbacks+=lightning_runs.testing.SignalAt", "--trainer.callbacks.step=5"]
    fit = ["fit", "--data=project.data.FileDataModule", f"--data.path={path}", "--data.batch_size=8", *stop]
    fit += ["--model.network=project.networks.MLP"]  # samples of 4 features
    with pytest.raises(SystemExit) as stopped:
        run(*fit, "--trainer.max_epochs=2")
    assert stopped.value.code == 143
    np.savez(path, samples=generator.normal(size=(50, 4)), labels=np.arange(50) % 2)  # as many, other values
    error = refusal(capsys, lambda: run(*fit, "--trainer.max_epochs=2", "--ckpt_path=last"))
    assert error.startswith(f"error: {path}: not the data the checkpoint's run read (50 samples #"), error
    assert "then, 50 samples #" in error and error.endswith("(drop --ckpt_path)"), error
