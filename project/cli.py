"""`python -m project {fit,validate,test,predict}`, and the tools:
`python -m project {export,runs,sweep,seeds,cv,schema,completion,verify}`.

The recipe is the defaults of the signatures (networks.py, model.py, data.py) and below, each with its reason:
`python -m project fit` trains exactly what `make train` trains. The machinery (run folders, exact resume,
clean stops, summaries, the tools) is the lightning-runs library: each of its parts is an option group
(`--best_checkpoint.monitor`, `--figures.every_n_epochs`), switched off with `null`.
"""

from collections.abc import Sequence

from lightning.pytorch.callbacks import Callback

import lightning_runs
from lightning_runs.cli import RunsCLI, set_part_defaults

from project.data import DigitsDataModule
from project.model import DigitsClassifier

TRAINER_DEFAULTS = {
    "accelerator": "cpu",  # 1,797 images of 8x8: on a GPU, kernel launches cost more than the arithmetic
    "devices": 1,
    # Epochs the cosine spans: 36 cross-validation errors vs 50 at 30 (channels 32, 64; docs/results.md).
    "max_epochs": 50,
    "log_every_n_steps": 1,  # 22 steps an epoch: Lightning's default of 50 would log no training step at all
}


class DigitsCLI(RunsCLI):
    def add_arguments_to_parser(self, parser) -> None:
        super().add_arguments_to_parser(parser)
        # The model's class count and sample shape are the data's (a model without those parameters ignores them).
        parser.link_arguments("data.num_classes", "model.init_args.num_classes", apply_on="instantiate")
        parser.link_arguments("data.sample_shape", "model.init_args.input_shape", apply_on="instantiate")
        set_part_defaults(parser, "best_checkpoint", monitor="val/acc", mode="max")  # ties: the later epoch
        # Longer than the schedule, as in the recipe studies: at 10 (or 30), val/loss noise in the high-LR phase
        # stopped runs before the low-LR end. It still stops a run whose val/loss turns NaN.
        set_part_defaults(parser, "early_stopping", monitor="val/loss", patience=100)


def cli_main(args: list[str] | None = None, callbacks: Sequence[Callback] = ()) -> DigitsCLI:
    """`callbacks`: objects a config cannot build, added to every Trainer."""
    return DigitsCLI(
        DigitsClassifier, DigitsDataModule, trainer_defaults=TRAINER_DEFAULTS, name="digits", callbacks=callbacks,
        args=args,
    )  # fmt: skip


def run(args: list[str] | None = None):
    return lightning_runs.main(cli_main, __package__, args)  # the CLI object, or what the tool returns
