"""Lightning's own example programs, copied byte for byte, pass `python -m project verify` with a config each and a
DataModule of ours where they download: exact at every stop point, and every evaluation command works or is one line.
The default recipe passes too, with the very table the README shows."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lightning_runs.tools import verify

from lightning_examples.random_backbone import write_random_backbone
from support import ROOT

HERE = Path(__file__).parent
# Lightning's repository at 7f0c3436cd3f6ad3753125672024fc415cbcb414 (2.6.0-169): each file's git blob id there
# (`git rev-parse <commit>:<path>`), which `git hash-object` of the copy must give. The demos are used as installed.
COPIED = {
    HERE / "generative_adversarial_net.py": "7ce7682d82c76166f1a189d04d501f90feca4d08",  # examples/pytorch/...
    HERE / "autoencoder.py": "332c9a811e3e43542f0f0bc9d72940e2496990ab",  # .../basics/
    HERE / "backbone_image_classifier.py": "965f636d7fc0bffc53d4a59682cccaa7ae5b1b13",  # .../basics/
    HERE / "computer_vision_fine_tuning.py": "69721214748ee15e44edc325984998ce8ad65d67",  # .../domain_templates/
    "lightning.pytorch.demos.transformer": "13b5e05adc68082da8994711e066a2aef07e0ae3",  # src/lightning/pytorch/demos/
    "lightning.pytorch.demos.boring_classes": "3855f31898b811b445db320444bce026e2ef8c36",
}
# What verify finds today where it is not exact (strict: each mark goes with its fix); the others are exact at every
# stop and each command works or is one line.
TODAY = {
    "generative_adversarial_net": "",
    "autoencoder": "",
    "backbone_image_classifier": "",
    "computer_vision_fine_tuning": "",
    "transformer": "",
    "boring_classes": "",
}

# The commands each example cannot run, for want of the step, loader or example input they need: one line each; every
# other command works.
LACKS = {
    "generative_adversarial_net": {"test", "validate", "predict"},
    "autoencoder": {"export"},
    "backbone_image_classifier": {"export"},  # no example_input_array
    "computer_vision_fine_tuning": {"test", "predict", "export"},
    "transformer": {"test", "validate", "predict", "export"},
    "boring_classes": {"export"},
}


def blob_id(path: Path) -> str:
    return subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True).stdout.strip()


def test_the_examples_are_lightnings_own_byte_for_byte():
    import importlib.util

    files = {Path(importlib.util.find_spec(k).origin) if isinstance(k, str) else k: v for k, v in COPIED.items()}
    assert {path.name: blob_id(path) for path in files} == {path.name: v for path, v in files.items()}


def test_each_example_has_its_config_naming_classes_that_import():
    import importlib

    for example in TODAY:
        config = yaml.safe_load((HERE / "configs" / f"{example}.yaml").read_text())
        for group in ("model", "data"):
            path = config[group]["class_path"] if isinstance(config[group], dict) else config[group]
            if path is not None:
                module, _, name = path.rpartition(".")
                assert hasattr(importlib.import_module(module), name), path


def verified(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`python -m project verify <args>` as a user runs it, the examples importable; the fine-tuning example's resnet50
    weights a random one of cwd's own (TORCH_HOME), as no network is."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(ROOT)]), "TORCH_HOME": str(cwd / "torch")}
    command = [sys.executable, "-m", "project", "verify", *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    print(done.stdout[done.stdout.find("stop point or command") :], done.stderr[-2000:])  # the table, in the report
    return done


def table(stdout: str) -> dict[str, str]:
    lines = stdout[stdout.index("stop point or command") :].splitlines()[1:]
    names = [*verify.POINTS, *verify.EVALUATIONS]
    return {name: line[len(name) :].strip() for line in lines for name in names if line.startswith(name)}


@pytest.mark.slow
@pytest.mark.parametrize(
    "example", [pytest.param(k, marks=[pytest.mark.xfail(strict=True, reason=v)] * bool(v)) for k, v in TODAY.items()]
)
def test_each_example_resumes_exactly_at_every_stop_and_each_command_works_or_is_one_line(example, in_tmp, monkeypatch):
    if example == "computer_vision_fine_tuning":
        monkeypatch.setenv("TORCH_HOME", str(in_tmp / "torch"))
        write_random_backbone()
    done = verified(f"--config={HERE / 'configs' / f'{example}.yaml'}", cwd=in_tmp)
    rows = table(done.stdout)
    # Lightning accumulates gradients for automatic optimization only: the GAN's accumulation row says so.
    exact = ("exact at batch", "not applicable: the module optimizes manually")
    assert [name for name in verify.POINTS if not rows[name].startswith(exact)] == []
    lacking = ("works", "refused in one line")
    assert [s for s in verify.EVALUATIONS if not rows[s].startswith(lacking if s in LACKS[example] else "works")] == []
    assert done.returncode == 0


@pytest.mark.slow
def test_the_default_recipe_is_exact_and_its_table_begins_as_the_readme_shows(in_tmp):
    done = verified(cwd=in_tmp)
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout[done.stdout.index("stop point or command") :].strip().splitlines()
    readme = (ROOT / "README.md").read_text()
    shown = re.search(r"```\n(stop point or command.*?)```", readme, flags=re.DOTALL)[1].strip().splitlines()
    assert len(shown) >= 5 and printed[: len(shown)] == shown
