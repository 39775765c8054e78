"""A sweep's search space: each option's values, a range or a list of choices, checked before any trial runs."""

import math
from dataclasses import dataclass
from typing import Any

from lightning_runs.errors import UsageError


@dataclass
class Range:
    """Sampled from [low, high], evenly or, with `log`, log-uniformly; integers when both ends are integers."""

    low: int | float
    high: int | float
    log: bool = False


@dataclass
class Choice:
    """One of `choices`, for categories and for numbers only some values make sense (batch sizes)."""

    choices: list[str | int | float | bool]


def search_space(space: dict[str, Any]) -> dict[str, Range | Choice]:
    """Each option's values as a Range or a Choice, or one line naming the option: Optuna refused a range with low
    above high, an empty list of choices or a log range from 0 only as each trial sampled it, failing every trial."""
    if not space:
        raise UsageError("--space {}: give at least one option to search, such as model.lr: {low: 0.001, high: 0.1}")
    parsed = {}
    for option, values in space.items():
        where = f"--space {option}"
        keys = set(values) if isinstance(values, dict) else set()
        if keys == {"choices"}:
            choices = values["choices"]
            if not isinstance(choices, list) or not choices:
                raise UsageError(f"{where}: choices must be a list of at least one value, got {choices!r}")
            parsed[option] = Choice(choices)
        elif {"low", "high"} <= keys <= {"low", "high", "log"}:
            parsed[option] = _range(where, values["low"], values["high"], values.get("log", False))
        else:
            raise UsageError(
                f"{where}: {values!r} is neither a range ({{low: 0.001, high: 0.1}}, with log: true for a log-uniform"
                " one) nor a list of choices ({choices: [32, 64]})"
            )
    return parsed


def _range(where: str, low, high, log) -> Range:
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (low, high)):
        raise UsageError(f"{where}: low and high must be finite numbers, got {low!r} and {high!r}")
    if low > high:
        raise UsageError(f"{where}: low {low} is above high {high}; swap them")
    if not isinstance(log, bool):
        raise UsageError(f"{where}: log must be true or false, got {log!r}")
    if log and low <= 0:
        raise UsageError(f"{where}: a log-uniform range must start above 0, got low {low}")
    return Range(low, high, log)


def corners(ranges: dict[str, Range | Choice]) -> list[list[str]]:
    """Options for a few fits that between them give every option each end of its range and each of its choices
    (`--model.lr=0.001 --data.batch_size=32`, then `--model.lr=0.1 --data.batch_size=64`, ...): a value the fit
    refuses is then refused before any trial, not by the trials that happen to sample it."""
    values = {key: v.choices if isinstance(v, Choice) else [v.low, v.high] for key, v in ranges.items()}
    count = max(len(listed) for listed in values.values())
    return [[f"--{key}={listed[min(i, len(listed) - 1)]}" for key, listed in values.items()] for i in range(count)]
