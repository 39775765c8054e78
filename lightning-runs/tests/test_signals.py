"""A signal outside the training loop stops as cleanly as one inside it: SIGTERM (exit 143) or Ctrl-C (130) during
the final epoch's validation, the test after a fit (`--test_best`), `test` or `predict` saves what can be saved, says
so in one line, and leaves no empty run folder. Stops inside the loop: test_resume_steps.py."""

import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from tiny_runs import epochs_processed, load, run, scalars, snapshot

from lightning_runs.cli import placement
from lightning_runs.testing import SignalAt

SHORT = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2"]
RUN = Path("runs/tiny/version_0")
LAST, BEST = RUN / "checkpoints/last.ckpt", RUN / "checkpoints/best.ckpt"
NAMES = {signal.SIGTERM: "SIGTERM", signal.SIGINT: "Ctrl-C"}
SIGNALS = pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=NAMES.get)


def signal_in(phase: str, signum: int, step: int | None = None) -> list[SignalAt]:
    """This process gets `signum` as the phase's first batch begins (at that global step, or at any)."""
    return [SignalAt(step=step, signum=signum, phase=phase)]


def stopped(capsys, command, signum: int) -> str:
    """Run `command()`, expecting the exit code of `signum` and no traceback; the last line it said."""
    with pytest.raises(SystemExit) as exit_:
        command()
    err = capsys.readouterr().err
    assert exit_.value.code == 128 + signum, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    assert "trainer.fit(" not in err, "the part's own line, said at once as in a plain script, not only by `main`"
    return err.strip().splitlines()[-1]


@SIGNALS
def test_a_stop_in_the_final_epochs_validation_lets_it_end_saves_the_run_and_exits_143_or_130(signum, capsys):
    said = stopped(capsys, lambda: run("fit", *SHORT, callbacks=signal_in("validation", signum, step=4)), signum)
    assert said == f"stopped by {NAMES[signum]} at step 4; saved {LAST}; the run had finished its last epoch"
    last = load(LAST)
    assert last["global_step"] == 4 and epochs_processed(last) == 2, "saved after that validation"
    assert load(BEST)["global_step"] in (2, 4) and [step for step, _ in scalars(RUN, "val/loss")] == [1, 3]


@SIGNALS
def test_a_stop_after_the_last_step_exits_143_or_130_and_records_the_run_completed(signum, capsys):
    said = stopped(capsys, lambda: run("fit", *SHORT, callbacks=signal_in("fit_end", signum)), signum)
    if signum == signal.SIGTERM:
        assert said.startswith("stopped by SIGTERM after training, at step 4; its checkpoints are saved")
    summary = json.loads((RUN / "summary.json").read_text())
    assert (summary["status"], summary["epochs"]) == ("completed", 2), "nothing of the run is missing"
    assert load(LAST)["global_step"] == 4 and BEST.is_file()


def test_a_stop_in_an_earlier_epochs_validation_records_the_run_interrupted(capsys):
    # The stop waits for the epoch's end (Lightning's should_stop): the run is not complete for it.
    sigterm = signal_in("validation", signal.SIGTERM, step=2)
    said = stopped(capsys, lambda: run("fit", *SHORT, callbacks=sigterm), signal.SIGTERM)
    assert said.endswith("resume with --ckpt_path last")
    assert json.loads((RUN / "summary.json").read_text())["status"] == "interrupted"


@SIGNALS
def test_a_stop_during_the_test_after_a_fit_keeps_the_fit_and_says_how_to_test_it(signum, capsys):
    in_test = signal_in("test", signum)
    said = stopped(capsys, lambda: run("fit", *SHORT, "--test_best=true", callbacks=in_test), signum)
    if signum == signal.SIGTERM:
        assert said == (
            f"stopped by SIGTERM while testing {BEST}; the fit had finished and saved its checkpoints;"
            f" test it with: python -m tiny_tasks test --ckpt_path {BEST}"
        )
    else:
        assert said == "stopped by Ctrl-C"
    assert load(LAST)["global_step"] == 4 and epochs_processed(load(LAST)) == 2
    assert BEST.is_file()


@SIGNALS
@pytest.mark.parametrize("subcommand", ["test", "predict"])
def test_a_stop_during_test_or_predict_changes_no_file_of_the_run_and_exits_143_or_130(
    finished_two_epochs, subcommand, signum, capsys
):
    shutil.copytree(finished_two_epochs, "runs")  # a fit of SHORT
    before = snapshot()
    in_it = signal_in(subcommand, signum)
    said = stopped(capsys, lambda: run(subcommand, f"--ckpt_path={BEST}", callbacks=in_it), signum)
    expected = f"stopped by SIGTERM during {subcommand}; run the same command again"
    assert said == (expected if signum == signal.SIGTERM else "stopped by Ctrl-C")
    after, summary = snapshot(), RUN / "summary.json"
    changed = [path for path in before if after.get(path) != before[path]]
    if subcommand == "test":  # the run's record of its evaluations says this one was interrupted
        assert changed == [str(summary)]
        assert json.loads(summary.read_text())["evaluations"][-1]["status"] == "interrupted"
    else:
        assert changed == []
    new = set(after) - set(before)
    assert new <= {str(RUN / f"config.{subcommand}.yaml")} | {p for p in new if "events.out" in p}, new


def test_sigterm_right_after_the_run_folder_is_claimed_leaves_no_folder(monkeypatch, capsys):
    claim_run_folder = placement.claim

    def claim_then_sigterm(subcommand, config):
        run_folder = claim_run_folder(subcommand, config)
        assert run_folder.path.is_dir()
        handler = signal.getsignal(signal.SIGTERM)
        assert handler not in (signal.SIG_DFL, None), "SIGTERM would end the process here, and leave the folder"
        os.kill(os.getpid(), signal.SIGTERM)
        return run_folder

    monkeypatch.setattr(placement, "claim", claim_then_sigterm)
    said = stopped(capsys, lambda: run("fit", *SHORT), signal.SIGTERM)
    assert said == "stopped by SIGTERM before the run started; nothing was written"
    assert not list(Path(".").iterdir()), "no folder left"


@SIGNALS
def test_a_fit_stopped_by_a_signal_gives_the_process_its_own_handlers_back(signum, capsys):
    before = {s: signal.getsignal(s) for s in NAMES}
    stopped(capsys, lambda: run("fit", *SHORT, callbacks=signal_in("train", signum, step=1)), signum)
    # A notebook or a test runs the next command in the same process: its Ctrl-C must raise KeyboardInterrupt again.
    assert {s: signal.getsignal(s) for s in NAMES} == before
