"""`python -m project {fit,validate,test,predict}`, and the tools: `python -m project {export,runs,sweep,seeds}`.

The recipe is the defaults of the signatures (networks.py, model.py, data.py) and of `TRAINER_DEFAULTS` below,
each with its reason: `python -m project fit` trains exactly what `make train` trains. The machinery (run folders,
resume, fault handling, summaries, the callbacks every run has, the tools) is the lightning-runs library.
"""

from collections.abc import Sequence

from lightning.pytorch.callbacks import Callback

import lightning_runs
from lightning_runs.cli import RunsCLI
from project.data import DigitsDataModule
from project.model import DigitsClassifier

TRAINER_DEFAULTS = {
    "accelerator": "cpu",  # 1,797 images of 8x8: on a GPU, kernel launches cost more than the arithmetic
    "devices": 1,
    # The cosine schedule's length: 36 cross-validation errors vs 50 at 30 epochs (channels (32, 64), docs/results.md).
    "max_epochs": 50,
    "log_every_n_steps": 1,  # 22 steps an epoch: Lightning's default of 50 would log no training step at all
}
# The LightningModule and DataModule a command builds without --model or --data; any other is chosen by class path
# (`--model my_exp.regression.Regressor`), and gets the data's num_classes and sample shape where its __init__ takes
# `num_classes` / `input_shape` (docs/contract.md).
MODEL = DigitsClassifier


class DigitsCLI(RunsCLI):
    def add_arguments_to_parser(self, parser) -> None:
        super().add_arguments_to_parser(parser)
        # Longer than the schedule, as in the recipe studies: at 10 (or 30), val/loss noise in the high-LR phase
        # stopped runs before the low-LR end. It still stops a run whose val/loss turns NaN.
        parser.set_defaults({"early_stopping.monitor": "val/loss", "early_stopping.patience": 100})
        parser.set_defaults({"checkpoint.monitor": "val/acc", "checkpoint.mode": "max"})  # best.ckpt, ties to the later
        # A model that logs neither watches val/loss, or is refused before it trains (docs/contract.md).


def cli_main(args: list[str] | None = None, callbacks: Sequence[Callback] = ()) -> DigitsCLI:
    """`callbacks`: objects a config cannot build, added to every Trainer (the sweep's pruning callback)."""
    return DigitsCLI(MODEL, DigitsDataModule, trainer_defaults=TRAINER_DEFAULTS, callbacks=callbacks, args=args)


def run(args: list[str] | None = None):
    return lightning_runs.main(cli_main, MODEL, args)  # the CLI object, or what the tool returns
