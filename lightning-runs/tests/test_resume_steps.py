"""A fit stopped at any step of its first two epochs resumes exactly: by SIGTERM (in this process) or by kill -9 (a
process of its own, with last.ckpt written after every step: kill -9 keeps only what is on disk), during each training
batch, each epoch's last one included, and inside validation; some are stopped twice in a row. Resumed with
`--ckpt_path <run>/checkpoints/last.ckpt`, each ends with the weights, optimizer state, callback states (best score,
early stopping, RNG) and best.ckpt of an uninterrupted run, bit for bit, every epoch validated. The data is the tiny
task's in the library's stateful batches (TinyBatches): where a plain DataLoader would start a stopped epoch over."""

from pathlib import Path

import pytest
import torch
from tiny_runs import assert_same_checkpoint, exit_status, load, run, scalars

from lightning_runs.testing import SignalAt

BATCHES = 3  # an epoch's training batches: stops at steps 2 and 5 are during the first two epochs' last batches
ARGS = ["--data=tiny_tasks.TinyBatches", "--trainer.max_epochs=3", f"--trainer.limit_train_batches={BATCHES}"]
EVERY_STEP = ["--last_checkpoint.every_n_train_steps=1"]
RUN = Path("runs/tiny/version_0")
LAST = RUN / "checkpoints/last.ckpt"


def stop_at(phase: str, step: int, signum: int) -> list[str]:
    """A stop as `step` begins (phase train), or as the validation after `step` training steps begins."""
    return [
        "--trainer.callbacks+=lightning_runs.testing.SignalAt",
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


def fitted(home: Path, *args: str) -> Path:
    """`fit <args>` run through in a folder of its own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        run("fit", *args)
    return home


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> dict[str, Path]:
    """The runs/ folders of the two recipes run through without a stop: as given, and with last.ckpt every step."""
    recipes = {"default": [], "every_step": EVERY_STEP}
    return {recipe: fitted(tmp_path_factory.mktemp(recipe), *ARGS, *extra) for recipe, extra in recipes.items()}


def assert_same_run(reference: Path, validated_at: set[int] | None = None) -> None:
    """This folder's run ended as the reference one did: last.ckpt bit for bit (weights, optimizer, scheduler, every
    callback's state: best score, early stopping, RNG), the same best.ckpt, and the same epochs validated."""
    assert_same_checkpoint(load(reference / LAST), load(LAST))
    best, expected = load(RUN / "checkpoints/best.ckpt"), load(reference / RUN / "checkpoints/best.ckpt")
    assert (best["epoch"], best["global_step"]) == (expected["epoch"], expected["global_step"]), "the best epoch"
    for key, tensor in expected["state_dict"].items():
        assert torch.equal(best["state_dict"][key], tensor), key
    validated = {step for step, _ in scalars(RUN, "val/loss")}  # logged at each epoch's last step
    assert validated == {step for step, _ in scalars(reference / RUN, "val/loss")}
    assert validated_at is None or validated == validated_at


def resumed(i: int) -> list[str]:
    return [f"--ckpt_path={LAST}"] if i else []


@pytest.mark.slow
@pytest.mark.parametrize("stops", ONCE + TWICE, ids=map(name, ONCE + TWICE))
def test_a_fit_stopped_by_sigterm_at_any_step_resumes_exactly(stops, uninterrupted, capsys):
    for i, (phase, step) in enumerate(stops):
        with pytest.raises(SystemExit) as stop:
            run("fit", *ARGS, *resumed(i), callbacks=[SignalAt(step=step, signum=15, phase=phase)])
        said = capsys.readouterr().err.strip().splitlines()[-1]
        assert stop.value.code == 143 and said.startswith("stopped by SIGTERM at step"), said
    run("fit", *ARGS, f"--ckpt_path={LAST}")
    assert_same_run(uninterrupted["default"], validated_at={2, 5, 8})


def killed(*args: str) -> None:
    """`fit <args>` as a process of its own (forked from this one where it can), which a SignalAt in `args` kills
    with -9."""
    assert exit_status(*args) == -9


@pytest.mark.slow
@pytest.mark.parametrize("stops", KILLED, ids=map(name, KILLED))
def test_a_fit_killed_at_any_step_with_last_ckpt_every_step_resumes_exactly(stops, uninterrupted):
    for i, (phase, step) in enumerate(stops):
        killed(*ARGS, *EVERY_STEP, *resumed(i), *stop_at(phase, step, 9))
    run("fit", *ARGS, *EVERY_STEP, f"--ckpt_path={LAST}")
    assert_same_run(uninterrupted["every_step"], validated_at={2, 5, 8})


# With gradient accumulation a step spans several batches: 4 batches an epoch are two windows of 2, or one of 3 and
# the epoch's last batch alone (Lightning steps at an epoch's end whatever the window). A stop inside a window waits
# for its step; a kill -9 inside one resumes from the step before it.
WINDOWS = {a: [*ARGS[:2], "--trainer.limit_train_batches=4", f"--trainer.accumulate_grad_batches={a}"] for a in (2, 3)}
BATCH_STOPS = [(accumulate, batch) for accumulate in WINDOWS for batch in range(8)]  # every batch of two epochs
# kill -9 as each batch after the first step begins (before it there is nothing to resume from): last.ckpt is the
# step before it, mid-epoch or the epoch's end.
KILLED_IN_A_WINDOW = [(accumulate, batch) for accumulate in WINDOWS for batch in range(accumulate, 8)]


@pytest.fixture(scope="module")
def accumulated(tmp_path_factory) -> dict[tuple[int, bool], Path]:
    """The runs/ folders of each accumulation run through without a stop, with last.ckpt every step or not."""
    return {
        (accumulate, every_step): fitted(
            tmp_path_factory.mktemp(f"accumulate{accumulate}"), *WINDOWS[accumulate], *(EVERY_STEP * every_step)
        )
        for accumulate in WINDOWS
        for every_step in (False, True)
    }


@pytest.mark.slow
@pytest.mark.parametrize(("accumulate", "batch"), BATCH_STOPS, ids=str)
def test_a_fit_stopped_by_sigterm_inside_an_accumulation_window_resumes_exactly(accumulate, batch, accumulated):
    with pytest.raises(SystemExit) as stop:
        run("fit", *WINDOWS[accumulate], callbacks=[SignalAt(batch=batch)])
    assert stop.value.code == 143
    run("fit", *WINDOWS[accumulate], f"--ckpt_path={LAST}")
    assert_same_run(accumulated[accumulate, False])


@pytest.mark.slow
@pytest.mark.parametrize(("accumulate", "batch"), KILLED_IN_A_WINDOW, ids=str)
def test_a_fit_killed_inside_an_accumulation_window_resumes_exactly(accumulate, batch, accumulated):
    args = [*WINDOWS[accumulate], *EVERY_STEP]
    killed(
        *args,
        "--trainer.callbacks+=lightning_runs.testing.SignalAt",
        f"--trainer.callbacks.batch={batch}",
        "--trainer.callbacks.signum=9",
    )
    run("fit", *args, f"--ckpt_path={LAST}")
    assert_same_run(accumulated[accumulate, True])
