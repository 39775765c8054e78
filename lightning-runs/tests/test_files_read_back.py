"""Every file the library reads back from a run (config.yaml, summary.json) goes through one reader
(run_folders.read_run_data): a file that is binary, cut short, of the wrong type, empty or too large is one line
naming it and what to do (exit 2), never a UnicodeDecodeError, AttributeError or OSError traceback; the commands that
read a run's config (a resume, an evaluation of its checkpoint) are refused before anything is written; so is a
checkpoint whose hyperparameters are no mapping (checkpoint_io.read_checkpoint)."""

import shutil
from pathlib import Path

import pytest
import torch
from tiny_runs import refusal, run, slow_repeats, snapshot

from lightning_runs.run_folders import MAX_RUN_FILE_BYTES, Unreadable, read_run_data

RUN = Path("runs/tiny/version_0")
FIX = "a run's own file, damaged: restore it, or move its run folder away"

# What a damaged file holds, and the problem the line says. A run's config.yaml as SaveConfigCallback writes it, cut.
DAMAGE = {
    "binary": (b"\xbf\x00\xff" * 100, "not UTF-8 text (invalid start byte at byte 0)"),
    "truncated": (b"model:\n  class_path: tiny_tasks.TinyClassifier\n  init_args: {lr: 0.0", "not YAML ("),
    "a list": (b"- 1\n- 2\n", "a YAML list, not a mapping"),
    "a scalar": (b"3\n", "a YAML int, not a mapping"),
    "wrong-typed section": (b"trainer: [1]\nmodel: {}\n", "its trainer is a YAML list, not a mapping"),
    "empty": (b"", "empty"),
    "oversized": (b"a: " + b"x" * MAX_RUN_FILE_BYTES, f"larger than {MAX_RUN_FILE_BYTES:,} bytes"),
}
JSON_DAMAGE = {
    "binary": (b'{"status": "\xff"}', "not UTF-8 text (invalid start byte at byte 12)"),
    "truncated": (b'{"status": "comp', "not JSON (Unterminated string"),
    "a list": (b"[1, 2]", "a JSON list, not a mapping"),
    "a 5,000-digit integer": (b'{"epochs": ' + b"9" * 5000 + b"}", "not JSON (Exceeds the limit"),
    "empty": (b"  \n", "empty"),
    "oversized": (b'{"a": "' + b"x" * MAX_RUN_FILE_BYTES + b'"}', f"larger than {MAX_RUN_FILE_BYTES:,} bytes"),
}


@pytest.mark.parametrize(
    "name,content,said",
    [("config.yaml", *case) for case in DAMAGE.values()] + [("summary.json", *case) for case in JSON_DAMAGE.values()],
    ids=[f"config.yaml-{kind}" for kind in DAMAGE] + [f"summary.json-{kind}" for kind in JSON_DAMAGE],
)
def test_the_reader_refuses_a_damaged_run_file_naming_it_the_problem_and_the_fix(name, content, said):
    path = Path(name)
    path.write_bytes(content)
    with pytest.raises(Unreadable) as refused:
        read_run_data(path)
    assert str(refused.value).startswith(f"{path}: {said}") and str(refused.value).endswith(f"; {FIX}")


@pytest.mark.parametrize("target", ["folder", "/dev/zero"])
def test_the_reader_never_opens_what_is_not_a_regular_file(target):
    path = Path("config.yaml")
    path.mkdir() if target == "folder" else path.symlink_to(target)
    with pytest.raises(Unreadable, match=f"^config.yaml: not a regular file; {FIX}$"):
        read_run_data(path)


COMMANDS = {
    "fit --ckpt_path last": ["fit", "--trainer.max_epochs=1", "--trainer.limit_train_batches=2", "--ckpt_path=last"],
    "test its checkpoint": ["test", f"--ckpt_path={RUN / 'checkpoints/last.ckpt'}"],
    "predict its checkpoint": ["predict", f"--ckpt_path={RUN / 'checkpoints/last.ckpt'}"],
}


# Every damage with every command. Every day each command once, on a damage met at another step of the reader; the
# other damages, each refused every day by the reader itself (above), go through the same command's path again.
EVERYDAY = {"fit --ckpt_path last": "truncated", "test its checkpoint": "binary", "predict its checkpoint": "a list"}
PAIRS = {f"{damage}-{command}": (DAMAGE[damage], args) for damage in DAMAGE for command, args in COMMANDS.items()}
REPEATS = {
    pair: f"{EVERYDAY[c]}-{c}" for pair in PAIRS for c in COMMANDS if pair.endswith(c) and EVERYDAY[c] not in pair
}


@pytest.mark.parametrize("damage,command", slow_repeats(list(PAIRS.values()), list(PAIRS), REPEATS))
def test_a_runs_damaged_config_is_one_line_for_a_resume_and_an_evaluation_of_its_checkpoint(
    finished, damage, command, capsys
):
    shutil.copytree(finished, "runs")
    content, said = damage
    (RUN / "config.yaml").write_bytes(content)
    before = snapshot()
    error = refusal(capsys, lambda: run(*command))
    assert error.startswith(f"error: {(RUN / 'config.yaml').absolute()}: {said}") and error.endswith(FIX), error
    assert snapshot() == before, "nothing written"


@pytest.mark.parametrize("key", ["hyper_parameters", "datamodule_hyper_parameters"])
@pytest.mark.parametrize("value", [[1, 2], "lr=0.1"], ids=["a list", "a string"])
def test_a_checkpoint_whose_hyperparameters_are_no_mapping_is_one_line(finished, key, value, capsys):
    """LightningCLI's own reading of them was an AttributeError or TypeError traceback."""
    checkpoint = torch.load(finished / "tiny/version_0/checkpoints/last.ckpt", weights_only=True)
    torch.save({**checkpoint, key: value}, "odd.ckpt")
    error = refusal(capsys, lambda: run("test", "--ckpt_path=odd.ckpt"))
    assert error == f"error: odd.ckpt: its {key} are a {type(value).__name__}, not a mapping of arguments"
