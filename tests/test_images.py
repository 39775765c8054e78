"""Images on disk (project/images.py): the folder's classes, the stratified split, the streamed statistics,
augmentation on the training split only, predict from a folder, bad input, and the exact mid-epoch resume with and
without workers. Folders of generated PNGs, written in each test's own directory: nothing is downloaded."""

import importlib.util
import os
import shutil
from functools import partial
from pathlib import Path

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from torchvision.io import write_png

from lightning_runs.testing import CrashAt, refusal

from project import images
from project.images import ImageFolderDataModule
from project.model import DigitsClassifier
from project.networks import DigitsCNN


def write_folder(root: Path, counts=(24, 24, 24), size: int = 12, seed: int = 0) -> Path:
    """root/class_<k>/<i>.png: noise with channel k % 3 brightened, `counts[k]` images of class k."""
    generator = torch.Generator().manual_seed(seed)
    for k, count in enumerate(counts):
        (root / f"class_{k}").mkdir(parents=True)
        for i in range(count):
            image = torch.randint(0, 128, (3, size, size), generator=generator, dtype=torch.uint8)
            image[k % 3] += 100
            write_png(image, str(root / f"class_{k}" / f"{i:03d}.png"))
    return root


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write_folder(tmp_path_factory.mktemp("images") / "folder")


def prepared(root: Path, **kwargs) -> ImageFolderDataModule:
    datamodule = ImageFolderDataModule(str(root), **{"image_size": (12, 12), "num_workers": 0, **kwargs})
    datamodule.setup("fit")
    return datamodule


def test_classes_and_sample_shape_are_known_before_setup(folder):
    datamodule = ImageFolderDataModule(str(folder), image_size=(16, 20))
    assert (datamodule.num_classes, datamodule.classes) == (3, ["class_0", "class_1", "class_2"])
    assert datamodule.sample_shape == (3, 16, 20) and not datamodule.splits
    assert ImageFolderDataModule(str(folder), channels=1).sample_shape == (1, 32, 32)


def test_the_split_is_stratified_seeded_disjoint_and_complete(tmp_path):
    root = write_folder(tmp_path / "uneven", counts=(40, 20, 10), size=4)
    datamodule = ImageFolderDataModule(str(root), val_fraction=0.1, test_fraction=0.2, seed=1)
    datamodule.setup("test")
    labels = torch.from_numpy(datamodule._listing[1])
    per_class = {name: torch.bincount(labels[idx], minlength=3).tolist() for name, idx in datamodule.splits.items()}
    assert per_class == {"val": [4, 2, 1], "test": [8, 4, 2], "train": [28, 14, 7]}  # round(n * fraction) per class
    assert sorted(torch.cat(list(datamodule.splits.values())).tolist()) == list(range(70))
    again = ImageFolderDataModule(str(root), val_fraction=0.1, test_fraction=0.2, seed=1)
    again.setup("test")
    other = ImageFolderDataModule(str(root), val_fraction=0.1, test_fraction=0.2, seed=2)
    other.setup("test")
    assert torch.equal(again.splits["val"], datamodule.splits["val"])
    assert not torch.equal(other.splits["val"], datamodule.splits["val"])


def test_folds_cut_train_and_val_and_keep_the_test_split(tmp_path):
    root = write_folder(tmp_path / "uneven", counts=(40, 20, 10), size=4)
    plain = ImageFolderDataModule(str(root), test_fraction=0.2)
    plain.setup("test")
    vals = []
    for fold in range(3):
        datamodule = ImageFolderDataModule(str(root), test_fraction=0.2, folds=3, fold=fold)
        datamodule.setup("test")
        assert torch.equal(datamodule.splits["test"], plain.splits["test"])
        labels = torch.from_numpy(datamodule._listing[1])
        assert torch.bincount(labels[datamodule.splits["val"]], minlength=3).tolist() in (
            [11, 5, 3],
            [10, 6, 2],
            [11, 5, 2],
            [10, 5, 3],
        )
        vals.append(set(datamodule.splits["val"].tolist()))
    assert set.union(*vals) == set(range(70)) - set(plain.splits["test"].tolist())
    assert sum(map(len, vals)) == 56  # each image outside the test split validates in one fold


def test_statistics_are_the_train_splits_per_channel_mean_and_std(folder):
    datamodule = prepared(folder, batch_size=5)  # 5: batches of several sizes, the last one ragged
    train = datamodule._files(datamodule.splits["train"])
    images = torch.stack([train[i][0] for i in range(len(train))])  # (N, 3, 12, 12), in [0, 1]
    assert datamodule.mean.shape == datamodule.std.shape == (3, 1, 1)
    torch.testing.assert_close(datamodule.mean.flatten(), images.mean(dim=(0, 2, 3)))
    torch.testing.assert_close(datamodule.std.flatten(), images.std(dim=(0, 2, 3)))


def batches(loader) -> list[torch.Tensor]:
    return [images for images, _ in loader]


def test_augmentation_is_on_the_training_split_only_and_a_function_of_the_seed(folder):
    datamodule = prepared(folder, batch_size=8, min_crop=0.5)
    val = batches(datamodule.val_dataloader())
    torch.testing.assert_close(val, batches(datamodule.val_dataloader()))
    # Validation images are the files, resized only: here 12x12 to 12x12, so the decoded pixels / 255.
    first_file = datamodule._files(datamodule.splits["val"][:1])
    assert torch.equal(val[0][0], first_file[0][0])
    train = datamodule.train_dataloader()
    epoch_0 = batches(train)
    train.sampler.set_epoch(1)
    assert not torch.equal(torch.cat(epoch_0), torch.cat(batches(train)))  # another order and other crops
    with_workers = prepared(folder, batch_size=8, min_crop=0.5, num_workers=2).train_dataloader()
    assert all(map(torch.equal, epoch_0, batches(with_workers))), "augmented alike with or without workers"
    unaugmented = prepared(folder, batch_size=8, min_crop=1.0, flip=False).train_dataloader()
    first, _ = next(iter(unaugmented.sampler))  # a position in the train split
    assert torch.equal(batches(unaugmented)[0][0], datamodule._files(datamodule.splits["train"][[first]])[0][0])


def small_model(datamodule: ImageFolderDataModule) -> DigitsClassifier:
    network = partial(DigitsCNN, channels=(4, 8))
    return DigitsClassifier(network, datamodule.num_classes, datamodule.sample_shape, lr=0.05)


def trainer(root: Path, **kwargs) -> L.Trainer:
    options = {"accelerator": "cpu", "devices": 1, "logger": False, "enable_progress_bar": False}
    return L.Trainer(default_root_dir=root, enable_model_summary=False, **{**options, **kwargs})


def test_predict_reads_a_folder_of_images_in_name_order(folder, tmp_path):
    datamodule = ImageFolderDataModule(str(folder), image_size=(12, 12), num_workers=0, batch_size=4)
    model = small_model(datamodule)
    to_predict = tmp_path / "new"
    to_predict.mkdir()
    for name in ("b.png", "a.png", "c.PNG"):  # file order is not name order
        (to_predict / name).write_bytes((folder / "class_1" / "000.png").read_bytes())
    (to_predict / "notes.txt").write_text("not an image")
    datamodule.hparams.predict_path = str(to_predict)
    outputs = trainer(tmp_path).predict(model, datamodule=datamodule)  # per batch {label: (N,), probability: (N,)}
    probabilities = torch.cat([batch["probability"] for batch in outputs])
    assert [Path(f).name for f in datamodule.predict_files] == ["a.png", "b.png", "c.PNG"]
    assert probabilities.shape == (3,) and ((probabilities > 0) & (probabilities <= 1)).all()
    datamodule.hparams.predict_path = str(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="elsewhere: neither an image nor a folder of images"):
        datamodule.setup("predict")


def test_a_csv_of_path_and_label_lists_the_same_images(folder, tmp_path):
    rows = [f"{folder}/class_{k}/{i:03d}.png,{name}" for k, name in enumerate("cab") for i in range(24)]
    (tmp_path / "list.csv").write_text("path,label\n" + "\n".join(rows) + "\n")
    listed = ImageFolderDataModule(str(tmp_path / "list.csv"), num_workers=0)
    assert listed.classes == ["a", "b", "c"] and listed.num_classes == 3
    assert listed._listing[1].tolist() == [2] * 24 + [0] * 24 + [1] * 24


@pytest.mark.parametrize("workers", [0, 2])
def test_an_unreadable_image_is_refused_in_one_line_naming_it(tmp_path, workers):
    root = write_folder(tmp_path / "broken", counts=(10, 10), size=4)
    (root / "class_1" / "005.png").write_bytes(b"not a png")
    with pytest.raises(ValueError) as error:
        prepared(root, batch_size=2, val_fraction=0.1, test_fraction=0.01, num_workers=workers)
    assert str(error.value).startswith(f"{root}/class_1/005.png: not an image decode_image reads (cannot identify")


def test_a_root_without_class_folders_or_a_list_is_refused_in_one_line_naming_it(tmp_path):
    (tmp_path / "flat").mkdir()
    write_png(torch.zeros(3, 4, 4, dtype=torch.uint8), str(tmp_path / "flat" / "only.png"))
    (tmp_path / "bad.csv").write_text("file,class\na.png,0\n")
    for root, message in [
        (tmp_path / "flat", "no class folder in it"),
        (tmp_path / "missing", "no such folder or file"),
        (tmp_path / "bad.csv", "expected a header row path,label"),
    ]:
        with pytest.raises(ValueError, match=message) as error:
            ImageFolderDataModule(str(root)).num_classes  # noqa: B018 (the property reads the folder)
        assert str(error.value).startswith(str(root)) and "\n" not in str(error.value)


class TorchRNG(Callback):
    """The global torch RNG in the checkpoint: dropout draws from it (Lightning does not save it)."""

    def state_dict(self) -> dict:
        return {"torch": torch.get_rng_state()}

    def load_state_dict(self, state: dict) -> None:
        torch.set_rng_state(state["torch"])


def fit(root: Path, folder: Path, workers: int, *callbacks: Callback, ckpt_path: str | None = None):
    L.seed_everything(0)
    datamodule = ImageFolderDataModule(str(folder), image_size=(12, 12), batch_size=8, num_workers=workers)
    model = small_model(datamodule)
    run = trainer(root, max_epochs=2, callbacks=[TorchRNG(), *callbacks], num_sanity_val_steps=0)
    run.fit(model, datamodule=datamodule, ckpt_path=ckpt_path, weights_only=False)  # our own file, with a partial
    return model, datamodule


@pytest.fixture(scope="module")
def uninterrupted(folder, tmp_path_factory):
    """The uninterrupted fit with a worker count, made once for the two resume cases of that count (it is seeded)."""
    fits = {}

    def fitted(workers: int):
        if workers not in fits:
            fits[workers] = fit(tmp_path_factory.mktemp(f"whole-{workers}"), folder, workers)
        return fits[workers]

    return fitted


# About a second each, so not marked slow. 57 training images in batches of 8: 7 steps an epoch. Saved at step 9
# (epoch 1's second batch) and stopped at 11; saved at step 7 (epoch 0's last batch, before its validation) and
# stopped at 10.
@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("every,crash", [(3, 11), (7, 10)], ids=["mid-epoch", "epoch-end"])
def test_a_fit_stopped_and_resumed_ends_with_the_uninterrupted_fits_weights(
    folder, uninterrupted, tmp_path, workers, every, crash
):
    expected, datamodule = uninterrupted(workers)
    torch.testing.assert_close(expected.input_mean, datamodule.mean.expand(3, 12, 12))  # (C, 1, 1) into the buffer
    saves = ModelCheckpoint(tmp_path / "checkpoints", every_n_train_steps=every, save_last=True, save_top_k=-1)
    with pytest.raises(RuntimeError, match="crash at step"):
        fit(tmp_path / "stopped", folder, workers, saves, CrashAt(crash))
    last = str(tmp_path / "checkpoints" / "last.ckpt")
    checkpoint = torch.load(last, weights_only=False)  # its hyperparameters name the network's partial
    assert checkpoint["global_step"] == crash // every * every
    # What the DataModule adds (the loader's position) is plain data: loadable with weights_only.
    torch.save(checkpoint["ImageFolderDataModule"], tmp_path / "position.pt")
    assert torch.load(tmp_path / "position.pt", weights_only=True) == checkpoint["ImageFolderDataModule"]
    resumed, _ = fit(tmp_path / "resumed", folder, workers, saves, ckpt_path=last)  # as a resumed run would
    state, theirs = resumed.state_dict(), expected.state_dict()
    assert state.keys() == theirs.keys()
    different = [name for name in state if not torch.equal(state[name], theirs[name])]
    assert not different, f"differ after the resume: {different}"


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_the_default_worker_count_is_the_same_on_one_cpu_as_on_several(folder):
    """A run stopped on a machine of one CPU resumes on one of several: the recipe a resume compares (the DataModule's
    arguments as parsed) does not follow the machine. The images module is run afresh on one CPU (as `taskset -c 0`
    starts a new process, without paying its imports), so a default computed at import follows it too."""
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})
    try:
        spec = importlib.util.spec_from_file_location("images_on_one_cpu", images.__file__)
        on_one_cpu = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(on_one_cpu)
        one = on_one_cpu.ImageFolderDataModule("x").hparams.num_workers
    finally:
        os.sched_setaffinity(0, cpus)
    assert one == ImageFolderDataModule(str(folder)).hparams.num_workers


# A file in a class folder that decode_image cannot read as one still image, made from a good one: each is named with
# its path before training (images.py's check at setup), never a worker's error mid-epoch or a crash.
def corrupt_png(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # inside the pixel data: libpng's "incorrect data check" crashed decode_image
    path.write_bytes(bytes(data))


def truncated_jpeg(path: Path) -> None:
    from torchvision.io import encode_jpeg

    data = encode_jpeg(torch.randint(0, 255, (3, 12, 12), dtype=torch.uint8)).numpy().tobytes()
    path.with_suffix(".jpg").write_bytes(data[: len(data) // 2])
    path.unlink()


def animated_webp(path: Path) -> None:
    from PIL import Image

    frames = [Image.new("RGB", (12, 12), (k * 80, 0, 0)) for k in range(3)]
    frames[0].save(path.with_suffix(".webp"), save_all=True, append_images=frames[1:])
    path.unlink()


def link_in_a_loop(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.name)


UNREADABLE = {
    "corrupt PNG": (corrupt_png, ".png", "broken PNG file"),
    "0-byte file": (lambda path: path.write_bytes(b""), ".png", "cannot identify image file"),
    "truncated JPEG": (truncated_jpeg, ".jpg", "Truncated File Read"),
    "animated WebP": (animated_webp, ".webp", "an animated WEBP, 3 frames"),
    "a link in a loop": (link_in_a_loop, ".png", "Too many levels of symbolic links"),
}
IMAGES = ["--data=project.images.ImageFolderDataModule", "--data.image_size=[8, 8]", "--data.num_workers=0"]


@pytest.mark.parametrize("damage,suffix,said", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_image_is_one_line_naming_it_before_training(tmp_path, capsys, damage, suffix, said):
    """The DataModule as `fit` sets it up, under the command's error handling: each kind of file's line. The whole
    command, and that nothing started: the test below."""
    from lightning_runs.errors import main

    root = write_folder(tmp_path / "images", counts=(10, 10), size=12)
    damage(root / "class_1" / "005.png")
    error = refusal(capsys, lambda: main(lambda: prepared(root, image_size=(8, 8), batch_size=4)))
    bad = root / "class_1" / f"005{suffix}"
    assert error.startswith(f"error: {bad}: not an image decode_image reads (") and said in error, error
    assert error.endswith("; remove or replace it"), error


def test_fit_on_an_unreadable_image_says_one_line_and_starts_nothing(tmp_path, monkeypatch, capsys):
    from helpers import refusal, run

    damage, suffix, said = UNREADABLE["corrupt PNG"]
    root = write_folder(tmp_path / "images", counts=(10, 10), size=12)
    damage(root / "class_1" / "005.png")
    monkeypatch.chdir(tmp_path)
    error = refusal(capsys, lambda: run("fit", *IMAGES, f"--data.root={root}", "--data.batch_size=4"))
    bad = root / "class_1" / f"005{suffix}"
    assert error.startswith(f"error: {bad}: not an image decode_image reads (") and said in error, error
    assert error.endswith("; remove or replace it") and not (tmp_path / "runs").exists(), "nothing started"


def test_files_are_listed_without_following_links_out_of_their_class_folder_nor_hidden_folders(folder, tmp_path):
    root = tmp_path / "linked"
    shutil.copytree(folder, root)
    (root / "class_0" / "loop").symlink_to("..")  # followed, it listed every class again under class_0: 6,560 of 160
    (root / ".ipynb_checkpoints").mkdir()  # what Jupyter leaves beside a notebook: no class
    write_png(torch.zeros(3, 4, 4, dtype=torch.uint8), str(root / ".ipynb_checkpoints" / "copy.png"))
    write_png(torch.zeros(3, 4, 4, dtype=torch.uint8), str(root / "class_1" / ".hidden.png"))
    listed = ImageFolderDataModule(str(root), num_workers=0)
    assert listed.classes == ["class_0", "class_1", "class_2"]
    assert listed._listing[1].tolist() == [0] * 24 + [1] * 24 + [2] * 24, "each image once, under its own class"


def test_a_fit_its_images_cannot_feed_is_one_line_before_training(folder, tmp_path, monkeypatch, capsys):
    """An image size the network cannot take, refused as the command builds the model. The splits' own checks, in the
    DataModule's fit setup: the test below."""
    from helpers import refusal, run

    monkeypatch.chdir(tmp_path)
    tiny = ["--data.image_size=[1, 1]", "--data.batch_size=4"]
    error = refusal(capsys, lambda: run("fit", *IMAGES, f"--data.root={folder}", *tiny))
    assert "DigitsCNN takes images of at least 2 x 2 pixels, not (1, 1)" in error
    assert not (tmp_path / "runs").exists(), error


@pytest.mark.parametrize(
    "options,said",
    [
        ({"batch_size": 64}, "60 training and 6 validation images; fit needs a full batch (64)"),
        ({"val_fraction": 0.01}, "66 training and 0 validation images; fit needs a full batch (4) and one to"),
    ],
    ids=["a batch larger than the split", "an empty validation split"],
)
def test_splits_a_fit_cannot_train_on_are_one_line_before_training(folder, capsys, options, said):
    """The DataModule's fit setup under the command's error handling; that a refusal there starts nothing: the
    unreadable image's test above, refused at the same setup."""
    from lightning_runs.errors import main

    error = refusal(capsys, lambda: main(lambda: prepared(folder, image_size=(8, 8), **{"batch_size": 4, **options})))
    assert error.startswith(f"error: {folder}: ") and said in error, error


def add_twelve_images(root: Path) -> None:
    write_folder(root / "more", counts=(6, 6), size=12, seed=1)
    for k in range(2):
        for image in (root / "more" / f"class_{k}").iterdir():
            image.rename(root / f"class_{k}" / f"new_{image.name}")
    shutil.rmtree(root / "more")


def replace_one_image(root: Path) -> None:
    write_png(torch.zeros(3, 14, 14, dtype=torch.uint8), str(root / "class_1" / "003.png"))  # another image, size


CHANGES = {"12 images added": add_twelve_images, "one image replaced": replace_one_image}
STOP = ["--trainer.callbacks+=lightning_runs.testing.SignalAt", "--trainer.callbacks.step=5"]


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    """A fit of a folder of images stopped (SIGTERM, exit 143) at step 5 of 8, made once for the tests below: `work`
    holds it (images/ and runs/), `pristine` a copy of both; and the fit's command."""
    from helpers import run

    base = tmp_path_factory.mktemp("stopped")
    root = write_folder(base / "work" / "images", counts=(20, 20), size=12)  # 32 training images: 4 steps an epoch
    fit = ["fit", *IMAGES, f"--data.root={root}", "--data.batch_size=8", "--trainer.max_epochs=2", *STOP]
    previous = Path.cwd()
    os.chdir(base / "work")
    try:
        with pytest.raises(SystemExit) as stopped:
            run(*fit)
    finally:
        os.chdir(previous)
    assert stopped.value.code == 143
    shutil.copytree(base / "work", base / "pristine", symlinks=True)
    return base / "work", base / "pristine", fit


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_fit_resumed_on_other_images_is_refused_in_one_line_and_resumes_once_they_are_back(
    stopped, monkeypatch, capsys, change
):
    from helpers import run

    work, pristine, fit = stopped
    shutil.rmtree(work)  # the stopped fit as it was left, at the paths its run recorded
    shutil.copytree(pristine, work, symlinks=True)
    monkeypatch.chdir(work)
    root = work / "images"
    shutil.copytree(root, work / "kept")
    change(root)
    error = refusal(capsys, lambda: run(*fit, "--ckpt_path=last"))
    assert error.startswith(f"error: {root}: not the data the checkpoint's run read (40 files #"), error
    assert error.endswith("put the data back as it was, or start a new run (drop --ckpt_path)"), error
    shutil.rmtree(root)
    (work / "kept").rename(root)  # back as it was: the run resumes and finishes
    run(*fit, "--ckpt_path=last")
    assert torch.load(work / "runs/digits/version_0/checkpoints/last.ckpt", weights_only=True)["global_step"] == 8
