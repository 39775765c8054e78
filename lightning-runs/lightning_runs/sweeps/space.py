"""A sweep's search space: each option's values as an Optuna distribution, checked before any trial runs (Optuna
itself checked a range with low above high, no choices or a log range from 0 only as each trial sampled it)."""

import math
from typing import Any

from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from lightning_runs.errors import UsageError


def search_space(space: dict[str, Any]) -> dict[str, BaseDistribution]:
    """`{low, high}` (`log: true` for a log-uniform range; integers when both ends are) or `{choices: [...]}` per
    option; one line naming the option where its values are neither, or Optuna refuses them."""
    if not space:
        raise UsageError("--space {}: give at least one option to search, such as model.lr: {low: 0.001, high: 0.1}")
    parsed = {}
    for option, values in space.items():
        try:
            parsed[option] = _distribution(values)
        except (ValueError, TypeError) as error:
            raise UsageError(f"--space {option}: {error}") from None
    return parsed


def _distribution(values) -> BaseDistribution:
    keys = set(values) if isinstance(values, dict) else set()
    if keys == {"choices"}:
        if not isinstance(values["choices"], list):
            raise ValueError(f"choices must be a list, got {values['choices']!r}")
        return CategoricalDistribution(values["choices"])
    if not {"low", "high"} <= keys <= {"low", "high", "log"}:
        raise ValueError(
            f"{values!r} is neither a range ({{low: 0.001, high: 0.1}}, with log: true for a log-uniform one) nor a"
            " list of choices ({choices: [32, 64]})"
        )
    low, high, log = values["low"], values["high"], values.get("log", False)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (low, high)):
        raise ValueError(f"low and high must be finite numbers, got {low!r} and {high!r}")
    if not isinstance(log, bool):
        raise ValueError(f"log must be true or false, got {log!r}")
    integers = isinstance(low, int) and isinstance(high, int)
    return (IntDistribution if integers else FloatDistribution)(low, high, log=log)


def suggest(trial, option: str, values: BaseDistribution):
    """The trial's value of `option`, sampled from `values`."""
    if isinstance(values, CategoricalDistribution):
        return trial.suggest_categorical(option, values.choices)
    suggest_number = trial.suggest_int if isinstance(values, IntDistribution) else trial.suggest_float
    return suggest_number(option, values.low, values.high, log=values.log)  # ty: ignore[missing-attribute]  # the others (Int, Float) have low, high and log


def corners(space: dict[str, BaseDistribution]) -> list[list[str]]:
    """Options for a few fits that between them give every option each end of its range and each of its choices
    (`--model.lr=0.001 --data.batch_size=32`, then `--model.lr=0.1 --data.batch_size=64`, ...): a value the fit
    refuses is then refused before any trial, not by the trials that happen to sample it."""
    ends = {key: getattr(values, "choices", None) or [values.low, values.high] for key, values in space.items()}  # ty: ignore[missing-attribute]  # the others (Int, Float) have low, high and log
    count = max(len(listed) for listed in ends.values())
    return [[f"--{key}={listed[min(i, len(listed) - 1)]}" for key, listed in ends.items()] for i in range(count)]
