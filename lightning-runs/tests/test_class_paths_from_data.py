"""A class path read from data (a checkpoint's hyperparameters, a run's config.yaml) is imported only from installed or
imported code and the project's own top-level modules: a payload.py put in the runs tree and named by a checkpoint or a
run's config is refused in one line naming the class path and the file it came from, and never runs."""

import shutil
import sys
from pathlib import Path

import pytest
import torch
import yaml
from tiny_runs import refusal, run

from lightning_runs.cli.class_paths import refuse_local_code
from lightning_runs.errors import UsageError, main
from lightning_runs.tools import export
from tiny_tasks import cli_main

RUN = Path("runs/tiny/version_0")
LAST = RUN / "checkpoints/last.ckpt"
EVIL = "runs.x.payload.Evil"
# Written by the payload if it is ever imported: the proof that it ran.
PAYLOAD = """
import pathlib
pathlib.Path("MARKER").write_text("the payload ran")
from tiny_tasks import TinyClassifier
class Evil(TinyClassifier):
    pass
"""


@pytest.fixture
def planted(finished, monkeypatch) -> Path:
    """A finished run, payload.py in the runs tree, and the working directory on sys.path, as `python -m` puts it."""
    shutil.copytree(finished, "runs")
    Path("runs/x").mkdir()
    Path("runs/x/payload.py").write_text(PAYLOAD)
    monkeypatch.syspath_prepend(str(Path.cwd()))
    return Path.cwd()


def checkpoint_naming(path: Path, class_path: str) -> Path:
    checkpoint = torch.load(LAST, weights_only=True)
    checkpoint["hyper_parameters"]["_class_path"] = class_path
    torch.save(checkpoint, path)
    return path


def config_naming(key: str, class_path: str) -> Path:
    """The run's config.yaml with `key` (model, or trainer.callbacks) naming the class; its checkpoint names none."""
    config = yaml.safe_load((RUN / "config.yaml").read_text())
    if key == "model":
        config["model"]["class_path"] = class_path
    else:
        config["trainer"]["callbacks"] = [{"class_path": class_path}]
    (RUN / "config.yaml").write_text(yaml.safe_dump(config))
    checkpoint = torch.load(LAST, weights_only=True)
    checkpoint["hyper_parameters"].pop("_class_path", None)
    torch.save(checkpoint, LAST)
    return RUN / "config.yaml"


CASES = {
    "export of a checkpoint": (lambda: checkpoint_naming(Path("evil.ckpt"), EVIL), "export"),
    "test of a checkpoint": (lambda: checkpoint_naming(Path("evil.ckpt"), EVIL), "test"),
    "fit from a checkpoint": (lambda: checkpoint_naming(Path("evil.ckpt"), EVIL), "fit"),
    "fit resuming a run's checkpoint": (lambda: checkpoint_naming(LAST, EVIL), "fit"),
    "test of a run whose config names the model": (lambda: config_naming("model", EVIL), "test"),
    "predict of a run whose config names a callback": (lambda: config_naming("callbacks", EVIL), "predict"),
    "export of a run whose config names the model": (lambda: config_naming("model", EVIL), "export"),
}


@pytest.mark.parametrize("plant,command", CASES.values(), ids=CASES.keys())
def test_a_class_path_from_data_naming_code_in_the_working_directory_is_refused_and_never_runs(
    planted, capsys, plant, command
):
    source = plant()
    checkpoint = source if source.suffix == ".ckpt" else LAST
    if command == "export":
        do = lambda: main(lambda: export.main(cli_main, ["--ckpt_path", str(checkpoint)]))  # noqa: E731
    else:
        do = lambda: run(command, f"--ckpt_path={checkpoint}", "--trainer.max_epochs=2")  # noqa: E731
    error = refusal(capsys, do)
    named = source if source.suffix == ".ckpt" else source.resolve()  # a run's files by their full path
    said = f"error: {named}: names {EVIL}, code in a folder of the working directory (runs/x/payload.py)"
    assert error.startswith(said), error
    assert not Path("MARKER").exists(), "the payload ran"


def test_an_imported_class_the_projects_own_module_and_a_data_file_named_like_a_module_are_kept(planted):
    checkpoint_naming(Path("own.ckpt"), "tiny_tasks.TinyClassifier")  # imported already: the owner's code
    run("test", "--ckpt_path=own.ckpt")
    # A module of the project's own at the top of the working directory, as docs/making-it-yours.md writes my_models.py.
    Path("projects_own_model.py").write_text("from tiny_tasks import TinyClassifier\nclass Own(TinyClassifier): ...\n")
    checkpoint_naming(Path("top.ckpt"), "projects_own_model.Own")
    try:
        assert type(run("test", "--ckpt_path=top.ckpt").model).__name__ == "Own"
    finally:
        sys.modules.pop("projects_own_model", None)
    Path("points").mkdir()  # a folder beside a data file: `points.npz` reads as a module path, and names no code
    refuse_local_code({"data": {"path": "points.npz"}, "net": "torch.nn.Linear"}, Path("config.yaml"))
    with pytest.raises(UsageError, match=r"^config.yaml: names runs.x.payload.evil, code in a folder of the working"):
        refuse_local_code({"data": {"network": "runs.x.payload.evil"}}, Path("config.yaml"))  # a callable's name
    assert not Path("MARKER").exists()
