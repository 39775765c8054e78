"""What the terminal shows: `--quiet` for CI logs, the library noise that no run should print, and the command a
message tells the user to type.

`--quiet`: no progress bar, no model summary, none of Lightning's info lines. Warnings, errors and the project's
own lines (where a run went, which checkpoint an evaluation used, how it ended) still print.
"""

import logging
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from jsonargparse import ActionYesNo

from lightning_runs.private import RANK_ZERO_LOGGERS

# Warnings that say nothing a user of this project can act on, each with the reason it is silenced.
NOISE = (
    # Lightning 2.6 on recent torch warns about its own use of a deprecated torch API: not ours to fix.
    r"`isinstance\(treespec, LeafSpec\)` is deprecated",
    # The run placement (placement.py) always gives a fresh fit a new folder; a resume or an evaluation
    # writes into its own run's folder on purpose, which Lightning warns about as if it were a mistake.
    r"Checkpoint directory .* exists and is not empty",
    # The sweep, the seed study and the tests call cli_main(args) in-process on purpose.
    r"LightningCLI's args parameter is intended to run from within Python",
    # PredictionWriter writes in input order from its own sampler and never reads Lightning's batch indices.
    r"Couldn't infer the batch indices fetched from your dataloader",
    # torchmetrics' confusion-matrix plot hands matplotlib a tensor; numpy 2 then warns about `copy`.
    r"__array__ implementation doesn't accept a copy keyword",
)
# Info lines that advertise a service instead of reporting the run.
ADVERTISEMENTS = ("💡 Tip:",)
# Info lines the project says better: fit's closing block (report.py) gives the epochs it ran of how many.
# Lightning's line comes before its progress bar is closed, glued to the end of the bar.
SAID_BY_THE_PROJECT = ("`Trainer.fit` stopped: `max_epochs=", "`Trainer.fit` stopped: `max_steps=")
# Log records of other libraries, by logger, that say nothing to act on. torch.compile's C++ build on a machine
# without CUDA says which CUDA_HOME it did not use.
OTHER_NOISE = {"torch.utils.cpp_extension": ("No CUDA runtime is found",)}
# Lightning's loggers, whose level --quiet raises.
LIGHTNING_LOGGERS = ("lightning.pytorch", "lightning.fabric")
# `python -m <package>`, <package> being the owner's: a copy renames its package, and this library is installed, not
# renamed. main() and RunsCLI name it after the owner's LightningModule (set_program) before anything prints.
_program = "python -m <package>"
_package: str | None = None  # the owner's package (`__main__` for a script), whose repository a run records


class _DropOtherNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(OTHER_NOISE.get(record.name, ()))


class _DropInfoNoise(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).lstrip().startswith(ADVERTISEMENTS + SAID_BY_THE_PROJECT)


@contextmanager
def library_noise_silenced() -> Iterator[None]:
    """For the duration of one CLI command: the filters are removed afterwards, so they never pile up."""
    drop = _DropInfoNoise()
    filters = [(logging.getLogger(name), drop) for name in RANK_ZERO_LOGGERS]
    filters += [(logging.getLogger(name), _DropOtherNoise()) for name in OTHER_NOISE]
    with warnings.catch_warnings():
        for message in NOISE:
            warnings.filterwarnings("ignore", message=message)
        for logger, dropped in filters:
            logger.addFilter(dropped)
        try:
            yield
        finally:
            for logger, dropped in filters:
                logger.removeFilter(dropped)


def add_quiet_option(parser) -> None:
    parser.add_argument(
        "--quiet", action=ActionYesNo, default=False, help="Quiet output for CI logs: only warnings, errors, results."
    )


def apply_quiet(config) -> None:
    """Before anything is built: the seed message comes right after parsing."""
    level = logging.WARNING if config.get("quiet") else logging.INFO
    for name in LIGHTNING_LOGGERS:
        logging.getLogger(name).setLevel(level)  # set either way: an earlier quiet command in this process ends
    if config.get("quiet"):
        config.trainer.enable_progress_bar = False
        config.trainer.enable_model_summary = False


def set_program(model_class: type) -> None:
    set_package(model_class.__module__.partition(".")[0])


def set_package(package: str) -> None:
    global _program, _package
    _package = package
    # A LightningModule defined in a script run as `python train.py` lives in `__main__`.
    _program = f"python -m {package}" if package != "__main__" else f"python {sys.argv[0]}"


def program() -> str:
    """The command that starts the owner's project (`python -m my_exp`), for every message that says what to type."""
    return _program


def owner_package() -> str | None:
    """The top-level package of the owner's LightningModule, once set_program knows it."""
    return _package


def say(message: str) -> None:
    """One of the project's own lines: printed on rank zero even under --quiet."""
    from lightning.pytorch.utilities import rank_zero_only

    if rank_zero_only.rank == 0:
        print(message, flush=True)


def duration(seconds: float | None) -> str:
    """`9.8 s`, `3m 41s`, `2h 05m`: wall times as the fit's closing block and the runs table show them."""
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes}m {seconds:02d}s" if minutes < 60 else f"{minutes // 60}h {minutes % 60:02d}m"
