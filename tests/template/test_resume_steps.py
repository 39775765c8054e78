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


# With gradient accumulation a step spans several batches: 4 batches an epoch are two windows of 2, or one of 3 and
# the epoch's last batch alone (Lightning steps at an epoch's end whatever the window). A stop inside a window waits
# for its step; a kill -9 inside one resumes from the step before it.
WINDOWS = {2: ["--trainer.limit_train_batches=4", "--trainer.accumulate_grad_batches=2"]}
WINDOWS[3] = ["--trainer.limit_train_batches=4", "--trainer.accumulate_grad_batches=3"]
BATCH_STOPS = [(accumulate, batch) for accumulate in WINDOWS for batch in range(8)]  # every batch of two epochs
# kill -9 as each batch after the first step begins (before it there is nothing to resume from): last.ckpt is the
# step before it, mid-epoch or the epoch's end.
KILLED_IN_A_WINDOW = [(accumulate, batch) for accumulate in WINDOWS for batch in range(accumulate, 8)]


@pytest.fixture(scope="module")
def accumulated(tmp_path_factory) -> dict[tuple[int, bool], Path]:
    """The runs/ folders of each accumulation run through without a stop, with last.ckpt every step or not."""
    homes = {}
    for accumulate, every_step in ((a, e) for a in WINDOWS for e in (False, True)):
        homes[accumulate, every_step] = tmp_path_factory.mktemp(f"accumulate{accumulate}")
        with working_directory(homes[accumulate, every_step]):
            run("fit", "--trainer.max_epochs=3", *WINDOWS[accumulate], *(EVERY_STEP if every_step else []))
    return homes


def assert_same_accumulated_run(reference: Path) -> None:
    assert_same_checkpoint(load(reference / LAST), load(LAST))
    best, expected = load(RUN / "checkpoints/best.ckpt"), load(reference / RUN / "checkpoints/best.ckpt")
    assert (best["epoch"], best["global_step"]) == (expected["epoch"], expected["global_step"]), "the best epoch"
    assert {s for s, _ in scalars(RUN, "val/loss")} == {s for s, _ in scalars(reference / RUN, "val/loss")}


@pytest.mark.slow
@pytest.mark.parametrize(("accumulate", "batch"), BATCH_STOPS, ids=str)
def test_a_fit_stopped_by_sigterm_inside_an_accumulation_window_resumes_exactly(accumulate, batch, accumulated):
    args = ["--trainer.max_epochs=3", *WINDOWS[accumulate]]
    with pytest.raises(SystemExit) as stop:
        run("fit", *args, "--trainer.callbacks+=support.SignalAt", f"--trainer.callbacks.batch={batch}")
    assert stop.value.code == 143
    run("fit", *args, f"--ckpt_path={LAST}")
    assert_same_accumulated_run(accumulated[accumulate, False])


@pytest.mark.slow
@pytest.mark.parametrize(("accumulate", "batch"), KILLED_IN_A_WINDOW, ids=str)
def test_a_fit_killed_inside_an_accumulation_window_resumes_exactly(accumulate, batch, accumulated):
    args = ["--trainer.max_epochs=3", *WINDOWS[accumulate], *EVERY_STEP]
    kill = [
        "--trainer.callbacks+=support.SignalAt",
        f"--trainer.callbacks.batch={batch}",
        "--trainer.callbacks.signum=9",
    ]
    process = start("fit", "--config", DEFAULT, *QUIET, *args, *kill)
    _, err = process.communicate(timeout=300)
    assert process.returncode == -9, err[-2000:]
    run("fit", *args, f"--ckpt_path={LAST}")
    assert_same_accumulated_run(accumulated[accumulate, True])
