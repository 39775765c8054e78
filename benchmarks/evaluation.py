"""An evaluation's cost: `python -m project test --ckpt_path <a run's best checkpoint>` against the plain Lightning
script a user would otherwise write for it, the same classes and checkpoint through `trainer.test(model,
datamodule=..., ckpt_path=...)` (TensorBoardLogger, the default progress bar), whole process, output piped.

    python -m benchmarks.evaluation [--rounds 6] [--epochs 2]

One fit of the default recipe (`--epochs`) makes the checkpoint; then a warm-up pair and `--rounds` pairs in
alternating order; the per-round ratio's median (min-max). Issue 52 asks at most 1.10.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.common import DEFAULT, alternating, project, spread, timed


def plain(checkpoint: str) -> None:
    """The plain script: what `python -m project test` does, written against Lightning alone."""
    import lightning as L
    from lightning.pytorch.loggers import TensorBoardLogger

    from project.data import DigitsDataModule
    from project.model import DigitsClassifier

    data = DigitsDataModule()
    model = DigitsClassifier(num_classes=data.num_classes, input_shape=data.sample_shape)
    trainer = L.Trainer(accelerator="cpu", devices=1, logger=TensorBoardLogger("runs", name="plain_test"))
    trainer.test(model, datamodule=data, ckpt_path=checkpoint)


def main(args: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--epochs", type=int, default=2)
    options = parser.parse_args(args)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        timed(project("fit", "--config", str(DEFAULT), f"--trainer.max_epochs={options.epochs}", "--quiet"), work)
        checkpoint = str(next(work.glob("runs/*/version_0/checkpoints/best.ckpt")))
        ours = lambda: timed(project("test", "--ckpt_path", checkpoint), work)[0]  # noqa: E731
        theirs = lambda: timed([sys.executable, "-m", "benchmarks.evaluation", "--plain", checkpoint], work)[0]  # noqa: E731
        alternating(1, ours, theirs)  # warm-up: the page cache, compiled bytecode
        pairs = alternating(options.rounds, ours, theirs)
    result = {"project": [a for a, _ in pairs], "plain": [b for _, b in pairs], "ratio": [a / b for a, b in pairs]}
    print(f"python -m project test --ckpt_path <best>  {spread(result['project'])} s")
    print(f"plain trainer.test(..., ckpt_path=<best>)   {spread(result['plain'])} s")
    print(f"ratio per round (issue 52: <= 1.10)        {spread(result['ratio'])}")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--plain"]:
        plain(sys.argv[2])
    else:
        main()
