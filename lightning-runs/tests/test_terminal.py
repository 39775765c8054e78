"""What the terminal says: fit ends with where the run went, what it scored and what to run next; evaluations say
which checkpoint they use; --quiet keeps these lines; no library noise; a mistyped option or a value of the wrong type
gets one short line."""

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from tiny_runs import command, load, run

from tiny_tasks import TinyDataModule

TINY = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=3"]
RUN = Path("runs/tiny/version_0")
TYPED = ["--model=tiny_typed.TypedClassifier", "--data=tiny_typed.TypedPoints"]  # typed and checked arguments


def project_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def points_in_the_test_split() -> int:
    data = TinyDataModule()
    data.setup("test")
    return len(data.splits["test"][0])


def test_fit_ends_with_the_run_its_best_score_its_checkpoints_and_the_next_commands(capsys):
    run("fit", *TINY, "--quiet")
    block = project_lines(capsys.readouterr().out)
    summary = json.loads((RUN / "summary.json").read_text())
    best, last = load(RUN / "checkpoints/best.ckpt"), load(RUN / "checkpoints/last.ckpt")
    score = summary["best_checkpoint"]["score"]
    rate = f"{summary['samples_per_sec']:,.0f} samples/s"
    assert re.fullmatch(rf"Fit completed: 2 of 2 epochs in \d+\.\d s, {rate}", block[0]), block
    assert block[1:5] == [
        f"  run folder   {RUN}",
        f"  best val/loss {score:.4f} at epoch {best['epoch'] + 1}: {RUN}/checkpoints/best.ckpt",  # what it monitors
        f"  last         epoch {last['epoch'] + 1}: {RUN}/checkpoints/last.ckpt",
        f"  next         python -m tiny_tasks test --ckpt_path {RUN}/checkpoints/best.ckpt",
    ]
    assert "tensorboard --logdir runs" in block[5] and len(block) == 6

    command = shlex.split(block[4].split("next", 1)[1])
    assert command[:3] == ["python", "-m", "tiny_tasks"]
    tested = run(*command[3:])  # the suggested command works as printed
    assert tested.trainer.ckpt_path == str(RUN / "checkpoints/best.ckpt")


def test_a_fit_with_test_best_ends_with_the_test_of_the_best_checkpoint_in_the_block(capsys):
    fit = run("fit", *TINY, "--test_best=true", "--quiet")
    block = project_lines(capsys.readouterr().out)[-6:]  # after the test's metrics table
    assert block[0].startswith("Fit completed: 2 of 2 epochs")
    assert block[4] == f"  test/loss    {fit.trainer.callback_metrics['test/loss']:.4f} of the best checkpoint"
    assert block[5].startswith("  next         tensorboard --logdir runs"), "tested already: no test command to suggest"


@pytest.mark.slow
def test_evaluations_say_which_checkpoint_they_use_and_which_run_best_and_last_came_from(capsys):
    for _ in range(2):
        run("fit", *TINY, "--quiet")
    capsys.readouterr()
    newest = Path("runs/tiny/version_1")
    saved = load(newest / "checkpoints/best.ckpt")
    run("test", "--ckpt_path=best", "--quiet")
    assert project_lines(capsys.readouterr().out)[0] == (
        f"test from {newest}/checkpoints/best.ckpt (--ckpt_path best: the newest run of runs/tiny with this recipe;"
        f" epoch {saved['epoch'] + 1}, step {saved['global_step']}); outputs go to {newest}"
    )
    run("validate", f"--ckpt_path={RUN}/checkpoints/last.ckpt", "--quiet")
    assert project_lines(capsys.readouterr().out)[0] == (
        f"validate from {RUN}/checkpoints/last.ckpt (epoch 2, step 6); outputs go to {RUN}"
    )
    run("predict", "--ckpt_path=last", "--quiet")
    lines = project_lines(capsys.readouterr().out)
    assert lines[0].startswith(f"predict from {newest}/checkpoints/last.ckpt (--ckpt_path last: the newest run")
    assert lines[-1] == f"Wrote {points_in_the_test_split()} predictions to {newest}/predictions.csv"


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
    space = {"model.lr": {"low": 0.01, "high": 0.1}}
    Path("tiny.yaml").write_text(yaml.safe_dump({"study": "tiny", "space": space, "n_trials": 1}))
    result = command("sweep", "--config", "tiny.yaml", "--args", json.dumps(TINY))
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


@pytest.mark.parametrize(
    "typed,meant",
    [
        ("--trainer.max_epoch", "--trainer.max_epochs"),  # a prefix: argparse would have taken it silently
        ("--trainer.max_epocs", "--trainer.max_epochs"),
        ("--modle.lr", "--model.lr"),
        ("--model.network.dropuot", "--model.network.dropout"),  # an argument of the chosen network class
        ("--data.batch_sise", "--data.batch_size"),  # and of the chosen DataModule class
    ],
)
def test_a_mistyped_option_is_refused_with_the_closest_real_one(typed, meant, capsys):
    refused(f"{typed}=2")
    assert capsys.readouterr().err.splitlines() == [f"error: unknown option {typed}: did you mean {meant}?"]


@pytest.mark.parametrize(
    "given,said",
    [
        ("--trainer.max_epochs=ten", "--trainer.max_epochs: expected int, got ten"),
        ("--trainer.gradient_clip_val=abc", "--trainer.gradient_clip_val: expected float or int, got abc"),
        ("--model.lr=abc", "--model.lr: expected PositiveFloat, got abc"),
        ("--model.label_smoothing=-1", "--model.label_smoothing: expected ClosedUnitInterval (v>=0 and v<=1), got -1"),
        ("--model.warmup_fraction=1", "--model.warmup_fraction: expected WarmupFraction (v>=0 and v<1), got 1"),
        ("--model.network.dropout=x", "--model.network.dropout: expected float, got x"),
        ("--data.batch_size=1.5", "--data.batch_size: expected PositiveInt, got 1.5"),
        ("--learning_rate_monitor.logging_interval=hour", "--learning_rate_monitor.logging_interval: expected one of step, epoch, got hour"),
    ],
)
def test_a_value_of_the_wrong_type_is_one_short_line_saying_what_was_expected_and_given(given, said, capsys):
    refused(given)
    assert capsys.readouterr().err.splitlines() == [f"error: {said}"]
