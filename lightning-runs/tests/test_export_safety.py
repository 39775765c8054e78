"""Export never destroys its input, reads checkpoints through the library's reader, writes whole or not at all, and
what the OS refuses (a read-only target, a folder) is one line from the entry point's handler (errors.py)."""

import math
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from export_tasks import exports, refused
from tiny_runs import immutable, load, slow_repeats

BEST = Path("runs/tiny/version_0/checkpoints/best.ckpt")
# Where only the write is refused (atomic.write_output, the same for every format): pt2, built in ~0.06 s against ONNX's
# ~1.5 s, the default's path tested in test_export_any_module.py.
PT2 = ("--format", "pt2")


@pytest.fixture
def runs(finished) -> Path:
    shutil.copytree(finished, "runs")
    return Path("runs")


def test_an_output_that_is_the_checkpoint_itself_is_refused_however_it_is_spelled(runs, capsys):
    Path("model.onnx").symlink_to(BEST.resolve())  # a link named as an export, to the checkpoint
    for output in [str(BEST), f"./{BEST}", str(BEST.resolve()), "model.onnx"]:
        error = refused(capsys, "--ckpt_path", str(BEST), "--output", output)
        assert error == f"error: --output {Path(output)}: a checkpoint; an export never replaces one, give another file"


def test_a_checkpoint_whose_default_output_name_is_itself_is_refused(runs, capsys):
    shutil.copy(BEST, "model.onnx")
    assert "an export never replaces one" in refused(capsys, "--ckpt_path", "model.onnx")


@pytest.mark.parametrize("output", ["runs/tiny/version_0/checkpoints/last.ckpt", "new.ckpt"])
def test_an_output_named_as_a_checkpoint_is_refused(runs, output, capsys):
    assert refused(capsys, "--ckpt_path", str(BEST), "--output", output) == (
        f"error: --output {output}: a checkpoint; an export never replaces one, give another file"
    )


def test_an_output_that_is_a_folder_is_one_line_from_the_entry_points_handler(runs, capsys):
    Path("exports").mkdir()  # yours, empty: it stays
    error = refused(capsys, "--ckpt_path", str(BEST), *PT2, "--output", "exports")
    assert error == "error: exports: is a folder; give a file" and Path("exports").is_dir()


def test_a_checkpoint_that_is_not_there_is_named_not_the_output_derived_from_it(runs, capsys):
    for output in ([], ["--output", "model.onnx"]):
        error = refused(capsys, "--ckpt_path", "runs/x/best.ckpt", *output)
        assert error == "error: runs/x/best.ckpt: no such file or folder; check the path"


BAD = [
    ("empty.ckpt", b"", "empty.ckpt: not a readable checkpoint ("),
    ("random.ckpt", os.urandom(4096), "random.ckpt: not a readable checkpoint ("),
    ("plain.ckpt", "TENSOR", "plain.ckpt: not a Lightning checkpoint (no state_dict)"),
]


# Every day a file torch cannot load and one that holds no state_dict; random.ckpt fails to load as empty.ckpt does.
@pytest.mark.parametrize("name,content,expected", slow_repeats(BAD, [c[0] for c in BAD], {"random.ckpt": "empty.ckpt"}))
def test_a_bad_checkpoint_is_one_line_and_nothing_is_written(runs, name, content, expected, capsys):
    path = Path(name)
    if content == "TENSOR":
        torch.save({"weights": torch.zeros(3)}, path)
    else:
        path.write_bytes(content)
    error = refused(capsys, "--ckpt_path", name, "--format", "pt2")
    assert error.startswith("error: ") and name in error and expected in error, error


@pytest.mark.parametrize("value", slow_repeats([math.nan, math.inf], ["nan", "inf"], {"inf": "nan"}))  # isfinite
def test_a_checkpoint_with_non_finite_weights_is_refused_naming_the_first_and_nothing_is_written(runs, value, capsys):
    checkpoint = load(BEST)
    name = next(iter(checkpoint["state_dict"]))
    checkpoint["state_dict"][name].view(-1)[0] = value
    torch.save(checkpoint, "diverged.ckpt")
    error = refused(capsys, "--ckpt_path", "diverged.ckpt", code=1)
    assert error == f"error: refusing to write diverged.onnx: non-finite values in {name}"


def test_an_output_that_is_another_file_is_refused_and_kept(runs, capsys):
    Path("README.md").write_text("# mine\n")
    error = refused(capsys, "--ckpt_path", str(BEST), *PT2, "--output", "README.md")
    assert error == "error: --output README.md: a file export did not write; give a new file, or move that one away"


def test_an_output_that_is_another_file_is_refused_before_the_checkpoint_is_read(runs, capsys):
    Path("README.md").write_text("# mine\n")
    error = refused(capsys, "--ckpt_path", "missing.ckpt", *PT2, "--output", "README.md")
    assert error == "error: --output README.md: a file export did not write; give a new file, or move that one away"
    assert Path("README.md").read_text() == "# mine\n"


@pytest.mark.slow
def test_an_export_replaces_its_output_whole_and_leaves_no_temp_file(runs):
    output = Path("tiny.pt2")
    output.write_bytes(b"PK\x03\x04 an older export: a zip archive, as pt2 files are")
    exports("--ckpt_path", str(BEST), "--format", "pt2", "--output", str(output))
    assert torch.export.load(output).module()(torch.zeros(5, 4)).shape == (5, 3)
    assert sorted(p.name for p in Path(".").iterdir()) == ["runs", "tiny.pt2"], "no temp file beside it"


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
        error = refused(capsys, "--ckpt_path", str(BEST), *PT2)
    assert error == f"error: {BEST.with_suffix('.pt2')}: read-only file system; give a path on a writable one"
    assert not list(BEST.parent.glob("*.pt2*")), "no file, no 0-byte or temporary one"


def test_an_export_into_an_immutable_folder_is_one_line_naming_the_path(runs, capsys):
    sealed = Path("sealed")
    sealed.mkdir()
    with immutable(sealed):
        error = refused(capsys, "--ckpt_path", str(BEST), *PT2, "--output", str(sealed / "model.pt2"))
    assert error.startswith(f"error: {sealed}/") and "operation not permitted" in error, error
    assert not list(sealed.iterdir()), "no file, no 0-byte or temporary one"
