"""What the terminal says: fit ends with where the run went, what it scored and what to run next (with --test_best,
what the best checkpoint tested; a module without test_step, one line saying so); --quiet keeps these lines; no library
noise; a mistyped option or a value of the wrong type gets one short line."""

import json
import re
import shlex
from pathlib import Path

import lightning as L
import pytest
import yaml
from tiny_runs import command, load, run

from lightning_runs import console
from tiny_tasks import TinyClassifier, TinyDataModule

TINY = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3"]
RUN = Path("runs/tiny/version_0")
TYPED = ["--model=tiny_typed.TypedClassifier", "--data=tiny_typed.TypedPoints"]  # typed and checked arguments


@pytest.fixture(autouse=True)
def no_program_named_yet(monkeypatch):
    """As in a fresh process: the command a message names is the first CLI's (a test before may have run another's)."""
    monkeypatch.setattr(console, "_program", console.PLACEHOLDER)


def project_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def points_in_the_test_split() -> int:
    data = TinyDataModule()
    data.setup("test")
    return len(data.splits["test"][0])


def closing_block(output: str) -> list[str]:
    """The fit's closing block: from its `Fit completed` line to the end."""
    lines = project_lines(output)
    return lines[next(i for i, line in enumerate(lines) if line.startswith("Fit ")) :]


class Untested(TinyClassifier):
    """TinyClassifier as if it had never written a test_step."""

    test_step = L.LightningModule.test_step


def test_fit_ends_with_the_run_its_best_score_its_checkpoints_and_the_next_commands(capsys):
    run("fit", *TINY, "--quiet")
    block = closing_block(capsys.readouterr().out)
    summary = json.loads((RUN / "summary.json").read_text())
    score = summary["best_checkpoint"]["score"]
    rate = f"{summary['samples_per_sec']:,.0f} samples/s"
    assert re.fullmatch(rf"Fit completed: 2 of 2 epochs in \d+\.\d s, {rate}", block[0]), block
    assert block[1:] == [
        f"  run folder   {RUN}",
        f"  best val/loss {score:.4f}: {RUN}/checkpoints/best.ckpt",  # what it monitors
        f"  last         {RUN}/checkpoints/last.ckpt",
        f"  next         python -m tiny_tasks test --ckpt_path {RUN}/checkpoints/best.ckpt",
        "               tensorboard --logdir runs",
    ]
    assert load(RUN / "checkpoints/last.ckpt")["global_step"] == summary["global_step"] == 6

    command = shlex.split(block[4].split("next", 1)[1])
    assert command[:3] == ["python", "-m", "tiny_tasks"]
    tested = run(*command[3:])  # the suggested command works as printed
    assert tested.trainer.ckpt_path == str(RUN / "checkpoints/best.ckpt")


def test_a_fit_with_test_best_ends_with_the_test_of_the_best_checkpoint_in_the_block(capsys):
    fit = run("fit", *TINY, "--test_best=true", "--quiet")
    block = closing_block(capsys.readouterr().out)  # after the test's metrics table
    assert block[0].startswith("Fit completed: 2 of 2 epochs") and len(block) == 7, block
    metrics = fit.trainer.callback_metrics
    assert block[4:6] == [
        f"  {name:12} {metrics[name]:.4f} of the best checkpoint" for name in ("test/loss", "test/acc")
    ]
    assert block[6] == "  next         tensorboard --logdir runs", "tested already: no test command to suggest"
    summary = json.loads((RUN / "summary.json").read_text())
    assert summary["metrics"]["test/loss"] == pytest.approx(metrics["test/loss"].item())
    assert [e["checkpoint"] for e in summary["evaluations"]] == ["checkpoints/best.ckpt"]


def test_a_module_without_test_step_says_so_in_one_line_and_suggests_no_test(capsys):
    run("fit", *TINY, "--model=test_terminal.Untested", "--test_best=true", "--quiet")
    out = capsys.readouterr().out
    assert "--test_best: Untested has no test_step, so the best checkpoint is not tested\n" in out
    block = closing_block(out)
    assert block[-1] == "  next         tensorboard --logdir runs" and not [line for line in block if " test " in line]
    assert json.loads((RUN / "summary.json").read_text())["evaluations"] == []


def test_a_first_fit_with_ckpt_path_last_says_it_starts_from_step_0_even_under_quiet(capsys):
    run("fit", *TINY, "--ckpt_path=last", "--quiet")
    assert project_lines(capsys.readouterr().out)[0] == (
        "No runs/tiny/version_*/checkpoints/last.ckpt yet: starting from step 0."
    )


# Printed on every command, on every predict, or per sweep trial by the libraries (issue 15), and what else Lightning
# prints that the library's own lines say better.
NOISE = [
    "💡 Tip",
    "litlogger",
    "Couldn't infer the batch indices",
    "LightningCLI's args parameter is intended to run from within Python",
    "`Trainer.fit` stopped",
]
MODEL_SUMMARY = "Trainable params"


@pytest.mark.slow
def test_a_real_fit_test_and_predict_print_none_of_the_library_noise():
    outputs = {}
    for args in (["fit", *TINY], ["test", "--ckpt_path=best"], ["predict", "--ckpt_path=best"]):
        result = command(*args)
        assert result.returncode == 0, result.stderr[-3000:]
        outputs[args[0]] = result
        assert not [noise for noise in NOISE if noise in result.stdout + result.stderr], args
    assert "Fit completed" in outputs["fit"].stdout and MODEL_SUMMARY in outputs["fit"].stderr, "a run, not quiet"
    # The progress bar redraws itself with carriage returns on stdout: the line must begin after a newline.
    predicted = outputs["predict"].stdout
    wrote = f"Wrote {points_in_the_test_split()} predictions to runs/tiny/version_0/predictions.csv\n"
    assert re.search(rf"(^|\n){re.escape(wrote)}", predicted), predicted


@pytest.mark.slow
def test_a_sweep_trial_prints_no_warning_and_no_model_summary():
    Path("space.yaml").write_text(yaml.safe_dump({"space": {"model.lr": {"low": 0.01, "high": 0.1}}}))
    result = command("sweep", "--config=space.yaml", "--study=tiny", "--n_trials=1", "--args", json.dumps(TINY))
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert "Trial 0 finished" in output and "Fit completed" in output
    assert not [noise for noise in [*NOISE, MODEL_SUMMARY] if noise in output], output


def refused(*args: str) -> None:
    """`python -m tiny_tasks fit <args>` of the typed task exits 2 having started nothing."""
    with pytest.raises(SystemExit) as exit:
        run("fit", *TYPED, *args)
    assert exit.value.code == 2
    assert not Path("runs").exists()


@pytest.mark.parametrize("subcommand", ["validate", "test", "predict"])
def test_a_mistyped_option_of_an_evaluation_is_refused_with_the_closest_real_one(subcommand, capsys):
    # Its parser is the only one built: the closest option was looked for in fit's, which is not there.
    with pytest.raises(SystemExit) as exit:
        run(subcommand, *TYPED, "--trainer.max_epoch=2")
    assert exit.value.code == 2
    meant = "error: unknown option --trainer.max_epoch: did you mean --trainer.max_epochs?"
    assert capsys.readouterr().err.splitlines() == [meant]


@pytest.mark.parametrize(
    "typed,meant",
    [
        ("--trainer.max_epoch", "--trainer.max_epochs"),  # a prefix: argparse would have taken it silently
        ("--trainer.max_epocs", "--trainer.max_epochs"),
        ("--best_checkpoint.monitr", "--best_checkpoint.monitor"),  # a part's option
        ("--model.lrr", "--model.lr"),  # an argument of the chosen model class
        ("--modle.lr", "--model.lr"),  # the default model class's argument, under a misspelt group
        ("--model.network.dropuot", "--model.network.dropout"),  # an argument of the network factory
        ("--data.batch_sise", "--data.batch_size"),  # and of the chosen DataModule class
    ],
)
def test_a_mistyped_option_is_refused_with_the_closest_real_one(typed, meant, capsys):
    refused(f"{typed}=2")
    assert capsys.readouterr().err.splitlines() == [f"error: unknown option {typed}: did you mean {meant}?"]


@pytest.mark.parametrize(
    "given,expected",
    [
        ("--trainer.max_epochs=ten", "int"),
        ("--trainer.gradient_clip_val=abc", "float"),
        ("--model.lr=abc", "PositiveFloat"),
        ("--model.label_smoothing=-1", "ClosedUnitInterval"),
        ("--model.warmup_fraction=1", "WarmupFraction"),
        ("--model.network.dropout=x", "float"),
        ("--data.batch_size=1.5", "PositiveInt"),
        ("--learning_rate_monitor.logging_interval=hour", "one of 'step', 'epoch'"),
    ],
)
def test_a_value_of_the_wrong_type_is_one_short_line_saying_what_was_expected_and_given(given, expected, capsys):
    refused(given)
    option, value = given.split("=")
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {option}: ") and expected in line and value in line and len(line) < 160, line
