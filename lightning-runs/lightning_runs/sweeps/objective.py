"""A sweep's objective: one trial as an ordinary `python -m <package> fit` process with the sampled values as options,
a run of the study's name (runs/sweeps/<study>/version_N), scored by what the fit reported to the study (trial.py);
and the signal that stopped it, which stops the worker."""

import json
import math
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

import optuna

from lightning_runs.errors import UsageError
from lightning_runs.private import trial_id
from lightning_runs.sweeps import storage, workers
from lightning_runs.sweeps import trial as trials
from lightning_runs.sweeps.space import suggest


@dataclass
class TrialFits:
    study: optuna.Study
    space: dict[str, optuna.distributions.BaseDistribution]
    fits: Any  # tools.fits.Fits, which runs the trial's fit and shows its command (tools import sweeps, not back)
    fixed: list[str]  # the configs and options of every trial, before the sampled values
    save_dir: str
    reporting: dict  # ReportToTrial's arguments but the trial's: metric, pruner (the storage: fits.env, trial.STORAGE)
    seed: int  # the sampler's, offset by each trial's number
    folds: int | None = None  # cross-validated trials: K fits each, scored by the mean of their bests
    stopped: list[int] = field(default_factory=list)  # the signal that stopped a trial, which then stops the worker
    mine: list[int] = field(default_factory=list)  # the numbers of the trials this worker ran
    refused: str | None = None  # why a trial's fit cannot be scored as the sweep scores, which stops the worker

    def __call__(self, trial: optuna.Trial) -> float:
        self.mine.append(trial.number)
        workers.mark(trial)  # on a journal file, how other workers tell whether this one still runs it
        if trial.user_attrs.get("pruned_at_epoch") is not None:  # a retried trial inherits the user attributes
            trial.set_user_attr("pruned_at_epoch", None)
        # Seeded by the trial's number, unique in the study: workers that start together sample different values,
        # and one worker's study is the same on every re-run.
        self.study.sampler = optuna.samplers.TPESampler(seed=self.seed + trial.number)
        bests = []
        for fold in range(self.folds) if self.folds else [None]:
            best = self.fit(trial, fold)
            if math.isnan(best):
                return best
            bests.append(best)
        return statistics.mean(bests)  # one fold's, or the folds' mean

    def fit(self, trial: optuna.Trial, fold: int | None) -> float:
        """One fit of the trial (one fold's, where the sweep cross-validates): its best reported value; NaN (failed)
        or TrialPruned (pruned) end the trial."""
        command = self.command(trial) + ([] if fold is None else [f"--data.folds={self.folds}", f"--data.fold={fold}"])
        (code,), signum = self.fits.run([[*command, self.callback(trial, (fold or 0) * trials.FOLD_STEPS)]])
        # What the fit reported, read back from the storage (this worker's cache holds only finished trials).
        reported = next(t for t in self.study.get_trials(deepcopy=False) if t.number == trial.number)
        last_fold = fold is None or fold == self.folds - 1  # ty: ignore[unsupported-operator]  # a fold is given only with folds
        if signum is not None:  # SIGTERM or Ctrl-C: the sweep is stopped, not the trial's values bad
            self.stopped.append(signum)
            if not (last_fold and trials.fit_finished(reported)):
                trial.set_user_attr("interrupted", True)  # failed, so that it does not count
                return math.nan
            # The stop came after the fit's last epoch: its score counts, and the worker stops once it is stored.
        elif code != 0:
            if code == 2 and reported.user_attrs.get("refused"):  # the sweep's metric: every trial would refuse it
                self.refused = reported.user_attrs["refused"]
            else:  # a refused option (2), a divergence or an exception (1): the sweep goes on
                print(f"Trial {trial.number} failed: its fit exited with {code} (its error is above)", file=sys.stderr)
            return math.nan  # Optuna records a NaN score as failed, without a traceback of its own
        if reported.user_attrs.get("pruned_at_epoch") is not None:
            raise optuna.TrialPruned(f"pruned after epoch {reported.user_attrs['pruned_at_epoch']}")
        values = [v for step, v in reported.intermediate_values.items() if step // trials.FOLD_STEPS == (fold or 0)]
        if not values:  # a fit that never validated
            print(f"Trial {trial.number} failed: its fit reported no {self.reporting['metric']}", file=sys.stderr)
            return math.nan
        return max(values) if self.study.direction == optuna.study.StudyDirection.MAXIMIZE else min(values)

    def after_trial(self, study: optuna.Study, trial) -> None:
        """Optuna's callback once a trial is stored: a stop signal stops the worker; so does a metric the fit does not
        log, every trial's refusal, and a study that holds nothing else is discarded (the corrected command starts it
        anew, with its own direction)."""
        if self.stopped:
            raise KeyboardInterrupt
        if self.refused:
            storage.discard_if_only(study, self.mine, self.fits.env[trials.STORAGE])
            raise UsageError(self.refused)

    def stop(self, signum, frame) -> None:
        """SIGTERM between trials (during one, trial.py passes it on to the fit instead)."""
        self.stopped.append(signum)
        raise KeyboardInterrupt

    def command(self, trial: optuna.Trial) -> list[str]:
        """`fit` with the configs, the fixed options, the sampled values and the trial's run: `--name <study>` in the
        sweep's folder."""
        sampled = [f"--{option}={suggest(trial, option, values)}" for option, values in self.space.items()]
        place = [f"--name={self.study.study_name}", f"--trainer.logger.init_args.save_dir={self.save_dir}"]
        command = ["fit", *self.fixed, *sampled, *place]
        print(f"Trial {trial.number}: {self.fits.shown(command)}", flush=True)
        return command

    def callback(self, trial: optuna.Trial, offset: int) -> str:
        """The fit's callback that reports to the trial (trial.py), added as any callback is."""
        # The storage through the environment (trial.STORAGE): a server's URL may hold its password, never in a config.
        reporting = {**self.reporting, "study": self.study.study_name, "trial_id": trial_id(trial), "offset": offset}
        callback = {"class_path": "lightning_runs.sweeps.trial.ReportToTrial", "init_args": reporting}
        return f"--trainer.callbacks+={json.dumps(callback)}"
