"""What a sweep scores its trials by, a metric and a direction, and the three places that hold it to that: the worker
before any trial (a metric without a direction, a study begun for another metric or direction), and each trial's fit
after its first validation (a metric its model does not log, or a default its best checkpoint no longer watches).

A direction is never guessed from a metric's name: it is the one given, or else the mode of the trials'
`--checkpoint.monitor`, for that metric only. A fit's best checkpoint may follow another metric than the recipe's
default (checkpoints/monitored.py): a sweep that took its metric from that default then scores what best.ckpt no longer
is chosen by, so the fit refuses it, before any training epoch, instead of every trial training to its end.
"""

from dataclasses import dataclass

from lightning_runs.checkpoints.monitored import VALIDATION
from lightning_runs.contract.names import stage_of
from lightning_runs.contract.parts import monitored_checkpoint
from lightning_runs.errors import UsageError

DIRECTIONS = {"max": "maximize", "min": "minimize"}  # a checkpoint's mode -> an Optuna study's direction
MODES = {direction: mode for mode, direction in DIRECTIONS.items()}
STUDY_METRIC = "metric"  # the study's user attribute naming the metric its trials are scored by


@dataclass
class Scoring:
    metric: str
    direction: str  # "maximize" or "minimize"
    # What the trials' best checkpoint should watch, where the sweep took the metric (and the mode, unless None) from
    # it: each fit confirms it. None: the metric was given, and the checkpoint may watch what it likes.
    checkpoint: tuple[str, str | None] | None = None


def scoring(resolved: dict, metric: str | None, direction: str | None) -> Scoring:
    """The metric and direction given, or else taken from the trials' resolved config (`fit --print_config`)."""
    checkpoint = resolved.get("checkpoint") or {}
    monitor, mode = checkpoint.get("monitor"), checkpoint.get("mode")
    if metric is None:
        if not monitor:
            raise UsageError("the trials' best checkpoint monitors no metric (--checkpoint.monitor): give --metric")
        return Scoring(monitor, direction or DIRECTIONS[mode], (monitor, None if direction else mode))
    if direction is None:
        if metric != monitor:
            watched = f"{monitor} ({mode})" if monitor else "no metric"
            raise UsageError(
                f"--metric {metric}: give --direction maximize or minimize; a direction is taken only for the metric"
                f" the trials' best checkpoint monitors, and that is {watched}"
            )
        direction = DIRECTIONS[mode]
    return Scoring(metric, direction)


def check_study(study, scoring: Scoring, where: str) -> None:
    """A study keeps the direction it was created with (Optuna cannot change it) and, in a user attribute, its metric:
    a command asking for others is refused before any trial, and one that finds no metric recorded records its own."""
    kept, recorded = study.direction.name.lower(), study.user_attrs.get(STUDY_METRIC)
    if kept != scoring.direction or recorded not in (None, scoring.metric):
        theirs = f"{recorded} ({kept})" if recorded else f"its metric ({kept})"
        raise UsageError(
            f"--study {study.study_name}: the study in {where} scores {theirs}, this command {scoring.metric}"
            f" ({scoring.direction}); start a new --study for that, or give the study's --metric and --direction"
        )
    if recorded is None:
        study.set_user_attr(STUDY_METRIC, scoring.metric)


def refusal(trainer, model, metric: str, direction: str, checkpoint: tuple[str, str | None] | None) -> str | None:
    """Why this fit cannot be scored as its sweep scores it, in one line, or None. Asked once the validation stage
    has logged (after MonitoredMetrics has made the run's monitors follow what the model logs)."""
    if stage_of(metric) not in VALIDATION:  # a training metric has not been logged yet: reported as it comes
        return None
    logged = set(trainer.callback_metrics)
    name, scored = f"{type(model).__module__}.{type(model).__qualname__}", f"{metric} ({MODES[direction]})"
    best = monitored_checkpoint(trainer)
    watched = (best.monitor, best.mode) if best is not None and best.monitor in logged else None
    if metric not in logged:
        known = sorted(m for m in logged if stage_of(m) in VALIDATION)
        if watched:
            advice = f"give --metric {watched[0]} --direction {DIRECTIONS[watched[1]]}"
        elif known:
            advice = "give --metric <one of them> and its --direction"
        else:
            advice = f"log one in its validation_step (self.log('{metric}', ...)) to sweep it"
        logs = f"its validation metrics: {', '.join(known)}" if known else "it logs no validation metric"
        return f"the sweep scores {scored}, which {name} does not log ({logs}): {advice}"
    if checkpoint and watched and (watched[0] != checkpoint[0] or checkpoint[1] not in (None, watched[1])):
        return (
            f"the sweep scores {scored}, the recipe's --checkpoint.monitor, but {name}'s best checkpoint watches"
            f" {watched[0]} ({watched[1]}): give --metric {watched[0]} --direction {DIRECTIONS[watched[1]]}, or"
            f" --metric {metric} --direction {direction} to score {metric} all the same"
        )
    return None
