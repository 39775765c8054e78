"""A fit stopped at any step of its first two epochs resumes exactly: by SIGTERM (in this process) or by kill -9 (a
process of its own, with last.ckpt written after every step: kill -9 keeps only what is on disk), during each training
batch, each epoch's last one included, and inside validation; some are stopped twice in a row. Resumed with
`--ckpt_path <run>/checkpoints/last.ckpt`, each ends with the weights, optimizer state, callback states (best score,
early stopping, RNG) and best.ckpt of an uninterrupted run, bit for bit, every epoch validated (issue 23)."""

from pathlib import Path

import pytest
import torch

from support import DEFAULT, QUIET, assert_same_checkpoint, load, run, scalars, start, working_directory

BATCHES = 3  # an epoch's training batches: stops at steps 2 and 5 are during the first two epochs' last batches
ARGS = ["--trainer.max_epochs=3", f"--trainer.limit_train_batches={BATCHES}"]
EVERY_STEP = ["--last_checkpoint.every_n_train_steps=1"]
RUN = Path("runs/digits/version_0")
LAST = RUN / "checkpoints/last.ckpt"


def stop_at(phase: str, step: int, signum: int) -> list[str]:
    """A stop as `step` begins (phase train), or as the validation after `step` training steps begins."""
    return [
        "--trainer.callbacks+=support.SignalAt",
        f"--trainer.callbacks.step={step}",
        f"--trainer.callbacks.signum={signum}",
        f"--trainer.callbacks.phase={phase}",
    ]


def name(stops: list[tuple[str, int]]) -> str:
    def one(phase: str, step: int) -> str:
        if phase == "validation":
            return f"validation-of-epoch-{step // BATCHES - 1}"
        last = "-last-batch-of-epoch-" + str(step // BATCHES) if (step + 1) % BATCHES == 0 else ""
        return f"step-{step}{last}"

    return "-then-".join(one(*stop) for stop in stops)


# Every training step of the first two epochs and both of their validations; then a few stopped twice in a row.
ONCE = [[("train", step)] for step in range(2 * BATCHES)] + [[("validation", BATCHES)], [("validation", 2 * BATCHES)]]
TWICE = [[("train", 2), ("validation", 6)], [("validation", 3), ("train", 5)], [("train", 2), ("train", 5)]]
# kill -9 as step 0 begins leaves nothing to resume from: the same command again is the whole "resume".
KILLED = [stops for stops in ONCE if stops != [("train", 0)]] + TWICE


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict[str, Path]:
    """The runs/ folders of the two recipes run through without a stop: as given, and with last.ckpt every step."""
    homes = {}
    for recipe, extra in (("default", []), ("every_step", EVERY_STEP)):
        homes[recipe] = tmp_path_factory.mktemp(recipe)
        with working_directory(homes[recipe]):
            run("fit", *ARGS, *extra)
    return homes


def assert_same_run(reference: Path) -> None:
    """This folder's run ended as the reference one did: last.ckpt bit for bit (weights, optimizer, scheduler, every
    callback's state: best score, early stopping, RNG), the same best.ckpt, and every epoch validated."""
    assert_same_checkpoint(load(reference / LAST), load(LAST))
    best, expected = load(RUN / "checkpoints/best.ckpt"), load(reference / RUN / "checkpoints/best.ckpt")
    assert (best["epoch"], best["global_step"]) == (expected["epoch"], expected["global_step"]), "the best epoch"
    for key, tensor in expected["state_dict"].items():
        assert torch.equal(best["state_dict"][key], tensor), key
    validated = {step for step, _ in scalars(RUN, "val/loss")}  # logged at each epoch's last step
    assert validated == {step for step, _ in scalars(reference / RUN, "val/loss")} == {2, 5, 8}


def resumed(i: int) -> list[str]:
    return [f"--ckpt_path={LAST}"] if i else []


@pytest.mark.slow
@pytest.mark.parametrize("stops", ONCE + TWICE, ids=map(name, ONCE + TWICE))
def test_a_fit_stopped_by_sigterm_at_any_step_resumes_exactly(stops, uninterrupted, capsys):
    for i, (phase, step) in enumerate(stops):
        with pytest.raises(SystemExit) as stop:
            run("fit", *ARGS, *resumed(i), *stop_at(phase, step, 15))
        said = capsys.readouterr().err.strip().splitlines()[-1]
        assert stop.value.code == 143 and said.startswith("stopped by SIGTERM at step"), said
    run("fit", *ARGS, f"--ckpt_path={LAST}")
    assert_same_run(uninterrupted["default"])


@pytest.mark.slow
@pytest.mark.parametrize("stops", KILLED, ids=map(name, KILLED))
def test_a_fit_killed_at_any_step_with_last_ckpt_every_step_resumes_exactly(stops, uninterrupted):
    for i, (phase, step) in enumerate(stops):
        process = start("fit", "--config", DEFAULT, *QUIET, *ARGS, *EVERY_STEP, *resumed(i), *stop_at(phase, step, 9))
        _, err = process.communicate(timeout=300)
        assert process.returncode == -9, err[-2000:]
    run("fit", *ARGS, *EVERY_STEP, f"--ckpt_path={LAST}")
    assert_same_run(uninterrupted["every_step"])
