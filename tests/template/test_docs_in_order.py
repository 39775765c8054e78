"""The README's and docs/reliability.md's commands run in the order they are written, and `--ckpt_path best|last`
in them picks the run each command describes."""

import re
import shlex

import numpy as np
import pytest
from test_docs import PACKAGE, code_blocks, is_tool, write_documented_files

from project.cli import cli_main, run
from project.data import DigitsDataModule

from support import QUIET, ROOT


def steps(document: str, until: str | None = None) -> list[tuple[list[str], str]]:
    """(words, comment) of each command line in the document's shell blocks before the heading `until`, in the order
    written."""
    text = (ROOT / document).read_text()
    found = []
    for language, block in code_blocks(text[: text.index(until) if until else None]):
        for line in block.splitlines() if language == "bash" else ():
            command, _, comment = line.partition("#")
            if words := shlex.split(command):
                found.append((words, comment.strip()))
    return found


def make_recipe(target: str) -> list[str]:
    """The `python -m project ...` arguments a make target runs, with the Makefile's defaults."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(rf"^{target}:.*\n\t\$\(PY\) -m {PACKAGE} (.*)", makefile, flags=re.MULTILINE)[1]
    config = re.search(r"^CONFIG \?= (\S+)", makefile, flags=re.MULTILINE)[1]
    return shlex.split(recipe.replace("$(CONFIG)", config).replace("$(ARGS)", ""))


IN_ORDER = {  # a document, where to stop (hardware and a scheduler this machine lacks), what best|last then pick
    "README.md": (
        "## Scaling",
        [
            # A run's name is its first config's stem, else the project's (digits): best|last are that name's newest.
            ("test --config my_run.yaml --ckpt_path best", "runs/my_run/version_0/checkpoints/best.ckpt"),
            ("predict --ckpt_path best", "runs/digits/version_1/checkpoints/best.ckpt"),
            (
                "predict --ckpt_path best --data.predict_path my_digits.npy",
                "runs/digits/version_1/checkpoints/best.ckpt",
            ),
            ("fit --config my_run.yaml --ckpt_path last", "runs/my_run/version_1/checkpoints/last.ckpt"),  # the stopped
        ],
    ),
    "docs/reliability.md": (
        None,
        [("fit --config my_run.yaml --ckpt_path last", "runs/my_run/version_0/checkpoints/last.ckpt")],
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("document", IN_ORDER)
def test_the_commands_run_in_the_order_written_and_best_and_last_pick_the_run_each_describes(
    document, in_tmp, monkeypatch
):
    """As a new user follows it: `make train` as its Makefile recipe, every fit, evaluation and cv fold told the same
    short schedule (the recipe they describe), a fit the document says was stopped crashed after its first epoch;
    targets that serve or run the tests left out. The user's own files are those the README names."""
    write_documented_files(in_tmp)
    monkeypatch.syspath_prepend(str(in_tmp))  # my_models.TinyNet, as a class path
    images, labels = DigitsDataModule().load()
    np.save("my_digits.npy", images[:5].numpy())  # raw 8x8 digits to predict
    np.savez("my_digits.npz", images=images.numpy(), labels=labels.numpy())  # a labelled file to train on
    five = labels < 5  # the README's fine-tuning: the digits 0-4 as a task of their own
    np.savez("five.npz", samples=images[five].numpy(), labels=labels[five].numpy())
    short = ["--trainer.max_epochs=2", "--trainer.limit_train_batches=2", *QUIET]
    picked = []  # (command, the checkpoint `--ckpt_path best|last` chose)
    until, expected = IN_ORDER[document]
    for words, comment in steps(document, until):
        if words[:2] == ["make", "train"]:
            words = ["python", "-m", PACKAGE, *make_recipe("train")]
        if words[:3] != ["python", "-m", PACKAGE]:
            continue  # make test, make tensorboard: they serve or test, they train nothing
        args = words[3:]
        if is_tool(args):
            run([*args, *short] if args[0] == "cv" else args)  # its folds are fits: the same short schedule
        elif comment.startswith("stopped"):
            with pytest.raises(RuntimeError, match="crash"):
                cli_main(
                    [*args, *short, "--trainer.callbacks+=lightning_runs.testing.CrashAt", "--trainer.callbacks.step=2"]
                )
        else:
            cli = cli_main([*args, *short])
            assert cli.trainer.state.finished, args
            if "--ckpt_path" in args and args[args.index("--ckpt_path") + 1] in ("best", "last"):
                picked.append((shlex.join(args), cli.trainer.ckpt_path))
    assert picked == expected
