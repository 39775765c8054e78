"""`--quiet`, for CI logs: no progress bar, no model summary, none of Lightning's info lines. Warnings, errors
(with their tracebacks) and the final metrics table of `test`/`validate` still print."""

import logging

from jsonargparse import ActionYesNo


def add_quiet_option(parser) -> None:
    parser.add_argument(
        "--quiet", action=ActionYesNo, default=False, help="Quiet output for CI logs: only warnings, errors, results."
    )


def apply_quiet(config) -> None:
    """Before anything is built: the seed message comes right after parsing."""
    if not config.get("quiet"):
        return
    config.trainer.enable_progress_bar = False
    config.trainer.enable_model_summary = False
    for name in ("lightning.pytorch", "lightning.fabric"):  # where rank_zero_info writes
        logging.getLogger(name).setLevel(logging.WARNING)
