"""Export never destroys its input, reads checkpoints through the CLI's safe reader and writes atomically (issue 13,
item 6)."""

import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from tiny_runs import assert_kept, load, refusal, run, snapshot

from lightning_runs.tools import export
from tiny_tasks import TinyClassifier

MODEL = TinyClassifier  # `python -m tiny_tasks export`'s model class
BEST = Path("runs/tiny/version_0/checkpoints/best.ckpt")


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """runs/ of a short finished fit."""
    home = tmp_path_factory.mktemp("export_edges")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        run("fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2")
    return home / "runs"


@pytest.fixture
def runs(trained) -> Path:
    shutil.copytree(trained, "runs")
    return Path("runs")


def same_file_spellings() -> list[str]:
    Path("link.ckpt").symlink_to(BEST.resolve())
    return [str(BEST), f"./{BEST}", str(BEST.resolve()), "link.ckpt"]


def test_an_output_that_is_the_checkpoint_itself_is_refused_however_it_is_spelled(runs, capsys):
    for output in same_file_spellings():
        before = snapshot()
        error = refusal(
            capsys, lambda output=output: export.main(MODEL, ["--ckpt_path", str(BEST), "--output", output])
        )
        assert "that is the checkpoint itself" in error
        assert not assert_kept(before, snapshot())


def test_a_checkpoint_whose_default_output_name_is_itself_is_refused(runs, capsys):
    shutil.copy(BEST, "model.onnx")
    before = snapshot()
    assert "that is the checkpoint itself" in refusal(capsys, lambda: export.main(MODEL, ["--ckpt_path", "model.onnx"]))
    assert not assert_kept(before, snapshot())


@pytest.mark.parametrize("output", ["runs/tiny/version_0/checkpoints/last.ckpt", "notes.txt", "new.ckpt"])
def test_an_output_that_is_another_checkpoint_or_a_file_of_another_kind_is_refused(runs, output, capsys):
    Path("notes.txt").write_text("mine\n")
    before = snapshot()
    error = refusal(capsys, lambda: export.main(MODEL, ["--ckpt_path", str(BEST), "--output", output]))
    assert "not a onnx export, or a checkpoint" in error
    assert not assert_kept(before, snapshot())


@pytest.mark.parametrize(
    "output,said",
    [
        ("exports", "a folder; give a file name, such as exports/model.onnx"),
        (
            "missing/best.onnx",
            "no folder missing to write it in; make it first, or give a file in a folder that exists",
        ),
    ],
)
def test_an_output_that_is_a_folder_or_inside_none_is_refused(runs, output, said, capsys):
    Path("exports").mkdir()  # yours, empty: it stays
    before = snapshot()
    error = refusal(capsys, lambda: export.main(MODEL, ["--ckpt_path", str(BEST), "--output", output]))
    assert error == f"error: --output {output}: {said}"
    assert not assert_kept(before, snapshot()) and Path("exports").is_dir()


def test_a_checkpoint_that_is_not_there_is_named_not_the_output_derived_from_it(runs, capsys):
    # Its default output, runs/x/best.onnx, lies in no folder either: the checkpoint is what the user got wrong.
    for output in ([], ["--output", "model.onnx"]):
        args = ["--ckpt_path", "runs/x/best.ckpt", *output]
        error = refusal(capsys, lambda: export.main(MODEL, args))  # noqa: B023 - called at once
        assert error == "error: --ckpt_path runs/x/best.ckpt: no such file"


def tampered(path: Path) -> Path:
    checkpoint = load(BEST)
    checkpoint["hyper_parameters"]["_instantiator"] = "os.system"
    torch.save(checkpoint, path)
    return path


BAD = [
    ("missing.ckpt", None, "no such file"),
    ("empty.ckpt", b"", "not a readable checkpoint"),
    ("random.ckpt", os.urandom(4096), "not a readable checkpoint"),
    ("plain.ckpt", "TENSOR", "not a Lightning checkpoint (no state_dict)"),
    ("tampered.ckpt", "TAMPERED", "refusing to load, its hyper_parameters name 'os.system' as instantiator"),
]


@pytest.mark.parametrize("name,content,expected", BAD, ids=[case[0] for case in BAD])
def test_a_bad_checkpoint_is_one_line_and_nothing_is_written(runs, name, content, expected, capsys):
    path = Path(name)
    if content == "TENSOR":
        torch.save({"weights": torch.zeros(3)}, path)
    elif content == "TAMPERED":
        tampered(path)
    elif content is not None:
        path.write_bytes(content)
    before = snapshot()
    error = refusal(capsys, lambda: export.main(MODEL, ["--ckpt_path", name, "--format", "pt2"]))
    assert name in error and expected in error
    assert not assert_kept(before, snapshot())


@pytest.mark.slow
def test_an_export_replaces_its_output_whole_and_leaves_no_temp_file(runs):
    output = Path("tiny.pt2")
    output.write_bytes(b"an older export")
    export.main(MODEL, ["--ckpt_path", str(BEST), "--format", "pt2", "--output", str(output)])
    assert torch.export.load(output).module()(torch.zeros(5, 4)).shape == (5, 3)
    assert sorted(p.name for p in Path(".").iterdir()) == ["runs", "tiny.pt2"], "no temp file beside it"


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_checkpoint_with_non_finite_weights_is_refused_naming_the_first_and_nothing_is_written(runs, value, capsys):
    checkpoint = load(BEST)
    name = next(iter(checkpoint["state_dict"]))
    checkpoint["state_dict"][name].view(-1)[0] = value
    torch.save(checkpoint, "diverged.ckpt")
    before = snapshot()
    error = refusal(capsys, lambda: export.main(MODEL, ["--ckpt_path", "diverged.ckpt"]))
    assert error == (
        f"error: --ckpt_path diverged.ckpt: {name} holds NaN or Inf values, so the model would output NaN; export a"
        " checkpoint of a run that did not diverge"
    )
    assert not assert_kept(before, snapshot())


@contextmanager
def read_only_mount(folder: Path):
    """`folder` remounted read-only in place (a bind mount: root may write into a read-only folder, not onto a
    read-only file system), or the test skipped saying why."""
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"no bind mount here ({mounted.stderr.strip() or 'mount failed'})")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True).returncode != 0:
            pytest.skip("no read-only remount here")
        yield
    finally:
        # lazy: a file the export still holds open (mapped weights) would make a plain umount fail, leaving the mount
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_an_export_beside_a_checkpoint_on_a_read_only_mount_is_one_line_naming_the_path(runs, capsys):
    with read_only_mount(BEST.parent.resolve()):
        before = snapshot()
        error = refusal(capsys, lambda: export.main(MODEL, ["--ckpt_path", str(BEST)]), code=1)
        assert str(BEST.with_suffix(".onnx")) in error and "file system is read-only" in error, error
        assert_kept(before, snapshot())
    assert not list(BEST.parent.glob("*.onnx*")), "no file, no 0-byte or temporary one"
