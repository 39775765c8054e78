"""Resuming never silently changes the recipe: a resume is the run's own command again (its config.yaml against the
command's: any difference is one line naming the options), keeps its best checkpoint's state and its schedulers' (every
interval, ReduceLROnPlateau too), never trains over its newer checkpoints, and a finished run is not extended."""

import shutil
import warnings
from pathlib import Path

import pytest
import torch
import yaml
from tiny_runs import QUIET, assert_kept, load, refusal, run, scalars, slow_repeats, snapshot

from lightning_runs.checkpoints import LastCheckpoint
from lightning_runs.errors import main
from lightning_runs.testing import CrashAt, SignalAt
from tiny_tasks import TRAINER_DEFAULTS, TinyClassifier, TinyCLI, TinyDataModule

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]
# No epoch improves val/loss by 100: early stopping ends the run after its second.
EARLY = ["--trainer.max_epochs=5", "--trainer.limit_train_batches=2", "--early_stopping.patience=0"]
EARLY += ["--early_stopping.min_delta=100"]
CRASH = [CrashAt(step=2)]  # as the second epoch begins
RUN = Path("runs/tiny/version_0")
LAST = RUN / "checkpoints/last.ckpt"


@pytest.fixture(scope="module")
def made(tmp_path_factory, stopped, finished_two_epochs) -> dict[str, Path]:
    """runs/ folders of a run stopped after the first of its 2 epochs (conftest's: SHORT, CRASH), one that finished
    them (conftest's: SHORT), and one that early stopping ended."""
    home = tmp_path_factory.mktemp("early")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        run("fit", *EARLY)
    return {"stopped": stopped, "finished": finished_two_epochs, "early": home / "runs"}


def copy(made, name: str) -> None:
    shutil.copytree(made[name], "runs")


REFUSED = [  # `last` is the newest run of the name: another recipe is refused, naming what differs
    ("finished", ["--trainer.max_epochs=4", "--trainer.limit_train_batches=2"], "--trainer.max_epochs 4 (the run: 2)"),
    ("finished", SHORT, "its run runs/tiny/version_0 already finished; start a new run to train more"),
    ("early", EARLY, "its run runs/tiny/version_0 already finished"),
    ("stopped", [*SHORT, "--data.batch_size=16"], "--data.batch_size 16 (the run: 32)"),
    ("stopped", [*SHORT, "--trainer.accumulate_grad_batches=2"], "--trainer.accumulate_grad_batches 2 (the run: 1)"),
    (
        "stopped",
        ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3"],
        "limit_train_batches 3.0 (the run: 2.0)",
    ),
    ("stopped", [*SHORT, "--trainer.strategy=ddp"], "--trainer.strategy ddp (the run: auto)"),
]


IDS = ["max_epochs", "finished", "early stopped", "batch_size", "accumulate_grad_batches", "limit_train_batches"]
IDS += ["strategy"]
# Every day a finished run (early stopping's) and a changed recipe, of the trainer's options; slow, a plain finished
# run and the recipe's comparison again, with other options.
REPEATS = {"finished": "early stopped", "batch_size": "max_epochs", "limit_train_batches": "max_epochs"}


@pytest.mark.parametrize("made_run,args,expected", slow_repeats(REFUSED, IDS, REPEATS))
def test_a_resume_that_would_change_the_recipe_or_extend_a_finished_run_is_refused(
    made, made_run, args, expected, capsys
):
    copy(made, made_run)
    before = snapshot()
    error = refusal(capsys, lambda: run("fit", *args, "--ckpt_path=last"))
    assert expected in error and ("a resumed run continues" in error or "start a new run" in error), error
    assert not assert_kept(before, snapshot()), "the run is untouched"


# 4 steps an epoch, last.ckpt at step 5: saved inside the second epoch, one step past the first epoch's best.ckpt.
INSIDE = ["--trainer.max_epochs=3", "--trainer.limit_train_batches=4", "--last_checkpoint.every_n_train_steps=5"]


@pytest.fixture(scope="module")
def crashed_inside_an_epoch(tmp_path_factory) -> Path:
    """runs/ of a fit of INSIDE that crashed at step 6: its last.ckpt is of step 5, inside an epoch."""
    home = tmp_path_factory.mktemp("inside")
    with pytest.MonkeyPatch.context() as patch, pytest.raises(RuntimeError, match="crash"):
        patch.chdir(home)
        run("fit", *INSIDE, callbacks=[CrashAt(step=6)])
    return home / "runs"


@pytest.mark.parametrize("made_run", ["finished", "stopped"])
def test_fit_from_a_best_checkpoint_never_trains_over_its_run(made, made_run, crashed_inside_an_epoch, capsys):
    """best.ckpt may be older than its run's last.ckpt: resuming from it would train those steps again, over both."""
    if made_run == "finished":
        copy(made, made_run)
        args, expected = SHORT, "its run runs/tiny/version_0 already finished"
    else:
        shutil.copytree(crashed_inside_an_epoch, "runs")
        args, expected = INSIDE, "its run went on to step 5"
        assert load(RUN / "checkpoints/best.ckpt")["global_step"] == 4
    assert load(RUN / "checkpoints/best.ckpt")["global_step"] <= load(LAST)["global_step"]
    before = snapshot()
    error = refusal(capsys, lambda: run("fit", *args, "--ckpt_path=best"))
    assert expected in error
    assert not assert_kept(before, snapshot()), "the run is untouched"


MIN_LR = 1e-5


class Scheduled(TinyClassifier):
    """TinyClassifier with a cosine schedule over the fit's steps down to `min_lr`: its length is derived from the
    trainer's settings (estimated_stepping_batches), as a project's schedule is."""

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        steps = self.trainer.estimated_stepping_batches
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps, eta_min=MIN_LR)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


def run_scheduled(*args: str, callbacks=()):
    args = ["fit", *QUIET, *args]
    return main(lambda: TinyCLI(Scheduled, TinyDataModule, TRAINER_DEFAULTS, "tiny", callbacks, args=args))


def test_a_resumed_schedule_spans_the_run_it_was_started_for_and_ends_at_min_lr(capsys):
    with pytest.raises(RuntimeError, match="crash"):
        run_scheduled(*SHORT, callbacks=CRASH)
    resumed = run_scheduled(*SHORT, f"--ckpt_path={LAST}")
    assert "fit resumes runs/tiny/version_0 from last.ckpt (step 2)" in capsys.readouterr().out
    assert resumed.trainer.global_step == 4
    assert load(LAST)["lr_schedulers"][0]["_last_lr"] == pytest.approx([MIN_LR])


class Plateau(TinyClassifier):
    """ReduceLROnPlateau on val/loss, as Lightning's docs configure it (an epoch-interval scheduler, stepped after the
    epoch's validation); `StepLR` beside it on a second interval: both resume bit for bit."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.5)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=10.0)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": plateau, "monitor": "val/loss"}}


class Stepped(TinyClassifier):
    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.5)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The last.ckpt of an uninterrupted `fit <args>`, fitted once a module for each args: both stops compare to it."""
    made: dict[tuple[str, ...], Path] = {}

    def last(*args: str) -> Path:
        if args not in made:
            home = tmp_path_factory.mktemp("reference")
            with pytest.MonkeyPatch.context() as patch:
                patch.chdir(home)
                run("fit", *args)
            made[args] = home / LAST
        return made[args]

    return last


@pytest.mark.parametrize("model", ["Plateau", "Stepped"])
@pytest.mark.parametrize("stop", ["sigterm", "crash"])
def test_an_epoch_interval_scheduler_resumes_bit_for_bit_from_an_epochs_end(model, stop, uninterrupted, capsys):
    """The checkpoint holds the scheduler as it is after its epoch's step (Lightning steps it after the hooks that
    save, and does not step it again on resume): lr 0.5 -> 0.25 -> 0.125 as in the uninterrupted run."""
    args = [f"--model={__name__}.{model}", "--trainer.max_epochs=4", "--trainer.limit_train_batches=3"]
    reference = load(uninterrupted(*args))
    if stop == "sigterm":  # during the second epoch's last batch: saved at that epoch's end
        with pytest.raises(SystemExit):
            run("fit", *args, callbacks=[SignalAt(step=5)])
    else:  # as the third epoch begins: last.ckpt of the second epoch's end
        with pytest.raises(RuntimeError, match="crash"):
            run("fit", *args, callbacks=[CrashAt(step=6)])
    run("fit", *args, "--ckpt_path=last")
    resumed = load(LAST)
    assert resumed["lr_schedulers"] == reference["lr_schedulers"]
    assert resumed["optimizer_states"][0]["param_groups"] == reference["optimizer_states"][0]["param_groups"]
    for name, tensor in reference["state_dict"].items():
        assert torch.equal(resumed["state_dict"][name], tensor), name


def test_a_run_saved_under_an_absolute_save_dir_keeps_its_best_checkpoint_state_on_resume(tmp_path):
    absolute = [f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}", *SHORT]
    with pytest.raises(RuntimeError, match="crash"):
        run("fit", *absolute, callbacks=CRASH)
    saved = next(v for k, v in load(LAST)["callbacks"].items() if k.startswith("BestCheckpoint"))
    assert Path(saved["dirpath"]).is_absolute()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed = run("fit", *absolute, f"--ckpt_path={tmp_path / LAST}")
    assert not [w for w in caught if "dirpath has changed" in str(w.message)], "the best score was reloaded"
    best = resumed.trainer.checkpoint_callback
    assert best.best_model_score <= saved["best_model_score"] and Path(best.best_model_path).is_file()  # val/loss: min
    assert list(best.best_k_models) == [best.best_model_path]


def test_checkpoint_state_saved_under_another_spelling_of_the_same_folder_is_restored_in_the_current_one():
    folder = RUN / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "best.ckpt").touch()
    absolute = str(folder.resolve() / "best.ckpt")
    state = {
        "dirpath": str(folder.resolve()),
        "best_model_score": torch.tensor(0.9),
        "best_model_path": absolute,
        "kth_best_model_path": absolute,
        "kth_value": torch.tensor(0.9),
        "best_k_models": {absolute: torch.tensor(0.9)},
        "last_model_path": "",
    }
    callback = LastCheckpoint(monitor="val/acc", mode="max", filename="best")
    callback.dirpath = str(folder)  # as set from the logger's folder when fit starts
    callback.load_state_dict(state)
    relative = str(folder / "best.ckpt")
    assert callback.best_model_score == 0.9 and callback.best_model_path == callback.kth_best_model_path == relative
    assert list(callback.best_k_models) == [relative], "one spelling: the old one would be deleted as stale"


def test_a_stop_at_an_epochs_last_training_batch_waits_for_its_validation_and_resumes_exactly(tmp_path, capsys):
    """SIGTERM during an epoch's last training batch, twice in a row: the stop waits for that epoch's validation
    and checkpoints, each resume completes, every epoch is validated, and the weights and optimizer state equal an
    uninterrupted run's. (A checkpoint of that batch resumed past its validation, and early stopping then failed.)"""
    args = ["--trainer.max_epochs=4", "--trainer.limit_train_batches=3"]
    for folder in ("reference", "stopped"):
        (tmp_path / folder).mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path / "reference")
        run("fit", *args)
        patch.chdir(tmp_path / "stopped")
        for step in (2, 8):  # the last training batch of the first and the third epoch
            with pytest.raises(SystemExit) as stop:
                run("fit", *args, "--ckpt_path=last", callbacks=[SignalAt(step=step)])
            assert stop.value.code == 143 and f"stopped by SIGTERM at step {step + 1}" in capsys.readouterr().err
        run("fit", *args, "--ckpt_path=last")
    reference, resumed = (load(tmp_path / folder / LAST) for folder in ("reference", "stopped"))
    assert resumed["global_step"] == reference["global_step"] == 12
    for name, tensor in reference["state_dict"].items():
        torch.testing.assert_close(resumed["state_dict"][name], tensor, rtol=0, atol=0, msg=name)
    torch.testing.assert_close(resumed["optimizer_states"][0]["state"], reference["optimizer_states"][0]["state"])
    epochs = [step for step, _ in scalars(tmp_path / "stopped" / RUN, "val/loss")]
    assert epochs == [step for step, _ in scalars(tmp_path / "reference" / RUN, "val/loss")] == [2, 5, 8, 11]


def test_an_evaluation_chooses_by_the_metric_its_run_monitored_unless_told_otherwise(capsys):
    """A run that kept its best checkpoint by val/acc (the tiny task monitors val/loss by default) is tested as such,
    from the checkpoint alone: the run's config.yaml is the evaluation's first config."""
    run("fit", *SHORT, "--best_checkpoint.monitor=val/acc", "--best_checkpoint.mode=max")
    best = str(RUN / "checkpoints/best.ckpt")
    tested = run("test", f"--ckpt_path={best}")
    assert (tested.trainer.checkpoint_callback.monitor, tested.trainer.checkpoint_callback.mode) == ("val/acc", "max")
    told = run("test", f"--ckpt_path={best}", "--best_checkpoint.monitor=val/loss", "--best_checkpoint.mode=min")
    assert told.trainer.checkpoint_callback.monitor == "val/loss"


@pytest.mark.parametrize("saved", ["at an epoch's end", "inside an epoch"])
def test_a_plain_loader_resumed_inside_an_epoch_says_so_in_one_line_of_its_own(
    saved, made, crashed_inside_an_epoch, capsys
):
    """TinyDataModule's shuffled DataLoader cannot resume its position: a resume from inside an epoch says so on a line
    of its own (not in a progress bar); one from an epoch's end is exact and says nothing."""
    if saved == "inside an epoch":  # step 5 of 4..7
        args = INSIDE
        shutil.copytree(crashed_inside_an_epoch, "runs")
    else:  # stopped as its second epoch began: last.ckpt of the first epoch's end
        args = SHORT
        copy(made, "stopped")
    assert load(LAST)["global_step"] == (5 if saved == "inside an epoch" else 2)
    capsys.readouterr()
    run("fit", *args, "--ckpt_path=last")
    said = [line for line in capsys.readouterr().out.splitlines() if "cannot resume its position" in line]
    if saved == "inside an epoch":
        assert said == [
            "resumed inside an epoch whose loader cannot resume its position: the epoch's remaining batches come from a"
            " fresh shuffle, not as the uninterrupted run's (torchdata's StatefulDataLoader resumes exactly)"
        ]
    else:
        assert said == []


def test_a_callback_with_an_enum_default_runs_in_a_fresh_fit_and_is_added_to_a_resume(made):
    """Timer's `interval` (typed str) defaults to an Enum member, which the config's YAML dump could not represent: a
    fresh fit was one line naming no option (`error: Given value: [Namespace(...)]`), a resume a RepresenterError
    traceback. A callback added on a resume watches the run and changes no recipe: it runs."""
    timer = "--trainer.callbacks+=lightning.pytorch.callbacks.Timer"
    copy(made, "stopped")
    cli = run("fit", *SHORT, "--ckpt_path=last", timer)
    assert cli.trainer.global_step == 4 and any(type(c).__name__ == "Timer" for c in cli.trainer.callbacks)
    run("fit", *SHORT, "--name=timed", timer, "--trainer.callbacks.duration=00:01:00:00")
    saved = yaml.safe_load(Path("runs/timed/version_0/config.yaml").read_text())["trainer"]["callbacks"]
    assert saved[-1]["init_args"] == {"duration": "00:01:00:00", "interval": "step", "verbose": True}
