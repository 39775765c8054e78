"""What the terminal shows: `--quiet` for CI logs, the library noise no run should print, and the command a message
tells the user to type (`python -m <the owner's package>`)."""

import logging
import sys
import warnings
from collections.abc import Generator
from contextlib import contextmanager

# Warnings that say nothing a user of this project can act on, each with its reason.
NOISE = (
    # Lightning 2.6 on recent torch warns about its own use of a deprecated torch API.
    r"`isinstance\(treespec, LeafSpec\)` is deprecated",
    # A resume or an evaluation writes into its own run's folder on purpose (cli/run_folders.py).
    r"Checkpoint directory .* exists and is not empty",
    # The tools and the tests call cli_main(args) in-process on purpose.
    r"LightningCLI's args parameter is intended to run from within Python",
    # PredictionWriter keeps its rows in input order itself; Lightning's batch indices are not read.
    r"Couldn't infer the batch indices fetched from your dataloader",
    # torchmetrics' plots hand matplotlib a tensor; numpy 2 then warns about `copy`.
    r"__array__ implementation doesn't accept a copy keyword",
    # LoaderCheck refuses a loader of no batches in one line of its own.
    r"Total length of `\w+` across ranks is zero",
)
# Info lines that advertise a service instead of reporting the run, or that the closing block says better.
DROPPED = ("💡 Tip:", "`Trainer.fit` stopped: `max_epochs=", "`Trainer.fit` stopped: `max_steps=")
# Where Lightning's rank_zero_info lines go (lightning_utilities' `rank_zero_module.log`): no public name (private.py).
RANK_ZERO_LOGGERS = ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero")
LIGHTNING_LOGGERS = ("lightning.pytorch", "lightning.fabric")  # whose level --quiet raises
PLACEHOLDER = "python -m <package>"  # until the entry point or RunsCLI names the owner's package
_program = PLACEHOLDER


def _kept(record: logging.LogRecord) -> bool:  # a logging filter: a callable is one since Python 3.2
    return not str(record.msg).lstrip().startswith(DROPPED)


@contextmanager
def library_noise_silenced() -> Generator[None, None, None]:
    """For one command: the filters come off afterwards, so they never pile up in a process running several."""
    loggers = [logging.getLogger(name) for name in RANK_ZERO_LOGGERS]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="|".join(NOISE))
        for logger in loggers:
            logger.addFilter(_kept)
        try:
            yield
        finally:
            for logger in loggers:
                logger.removeFilter(_kept)


def set_quiet(quiet: bool) -> None:
    """--quiet: none of Lightning's info lines (set either way: an earlier quiet command in this process ends)."""
    for name in LIGHTNING_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING if quiet else logging.INFO)


def is_quiet() -> bool:
    return logging.getLogger(LIGHTNING_LOGGERS[0]).getEffectiveLevel() > logging.INFO


def set_program(package: str | None) -> None:
    """`python -m <package>`, or `python <script>` for a LightningModule defined in a script run as `__main__`."""
    global _program
    _program = f"python -m {package}" if package not in (None, "__main__") else f"python {sys.argv[0]}"


def program() -> str:
    """The command that starts the owner's project, for every message that says what to type."""
    return _program


def say(message: str) -> None:
    """One of the project's own lines: printed on rank zero, under --quiet too."""
    from lightning.pytorch.utilities import rank_zero_only

    if rank_zero_only.rank == 0:  # ty: ignore[missing-attribute]  # Lightning sets it on the function at import
        print(message, flush=True)


def note(message: str) -> None:
    """A hint (how to declare what the library found missing): one of `say`'s lines, left out under --quiet."""
    if not is_quiet():
        say(message)


def duration(seconds: float | None) -> str:
    """`9.8 s`, `3m 41s`, `2h 05m`."""
    if not isinstance(seconds, int | float) or seconds != seconds:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes}m {seconds:02d}s" if minutes < 60 else f"{minutes // 60}h {minutes % 60:02d}m"
