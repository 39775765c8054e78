"""The example's own arguments are typed and checked: what its recipe cannot train (a learning rate of 0, fractions
that leave no training data, a network that does not exist) is refused at parse time in one line naming the option,
before any run folder exists. How the library words these lines, on a task of its own: lightning-runs/tests/
test_bad_input.py and test_terminal.py."""

from pathlib import Path

import pytest

from support import run, slow_repeats

# The option each line names; the wording after it is jsonargparse's and the library's (their tests hold it).
REFUSED = [
    (["--model.lr=0"], "--model.lr: "),
    (["--model.lr=-0.1"], "--model.lr: "),
    (["--data.batch_size=0"], "--data.batch_size: "),
    (["--data.val_fraction=0.5", "--data.test_fraction=0.5"], "val_fraction + test_fraction must be below 1"),
    (["--model.warmup_fraction=1.5"], "--model.warmup_fraction: "),
    (["--model.network=project.model.NoSuchNet"], "NoSuchNet"),
    (["--model.lr=abc"], "error: --model.lr: "),
    (["--model.label_smoothing=-1"], "error: --model.label_smoothing: "),
    (["--model.network.dropout=x"], "error: --model.network.dropout: "),
    (["--data.batch_size=1.5"], "error: --data.batch_size: "),
    (["--modle.lr=2"], "error: unknown option --modle.lr: did you mean --model"),
    (
        ["--model.network.dropuot=2"],
        "error: unknown option --model.network.dropuot: did you mean --model.network.dropout?",
    ),
    (["--data.batch_sise=2"], "error: unknown option --data.batch_sise: did you mean --data.batch_size?"),
]


IDS = [" ".join(args) for args, _ in REFUSED]
# Every day one case per check: a bound of LearningRate, PositiveInt and WarmupFraction, the fractions' sum, a class
# path that does not import, a value that is no number (an option's, a network's), a misspelt group and option.
# Slow: a check again with other values (the type's bound, no number of the type, a nested option's suggestion).
REPEATS = {
    "--model.lr=-0.1": "--model.lr=0",
    "--model.label_smoothing=-1": "--model.warmup_fraction=1.5",
    "--data.batch_size=1.5": "--model.lr=abc",
    "--model.network.dropuot=2": "--data.batch_sise=2",
}


@pytest.mark.parametrize("args,expected", slow_repeats(REFUSED, IDS, REPEATS))
def test_an_argument_the_recipe_cannot_train_exits_2_with_one_line_before_creating_anything(args, expected, capsys):
    with pytest.raises(SystemExit) as exit_:
        run("fit", *args)
    assert exit_.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and expected in errors[0], errors
    assert not Path("runs").exists() or not any(Path("runs").rglob("*")), "no run directory"
