"""TensorBoardRunLogger: Lightning's TensorBoardLogger, its scalars one event a call and on disk every few seconds."""

import math
import time
from collections.abc import Mapping

from jsonargparse.typing import NonNegativeFloat
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.utilities import rank_zero_only
from tensorboard.compat.proto.summary_pb2 import Summary
from torch import Tensor

from lightning_runs.private import tensorboard_file_writer
from lightning_runs.run_folders import RUNS


class TensorBoardRunLogger(TensorBoardLogger):
    """Lightning's TensorBoardLogger writes an event per scalar, each handed to the event writer's thread at once,
    and flushes the file after every logged step (its `save()`): with `log_every_n_steps` 1, five events and a wait
    for that thread a step. Here the scalars of a call share one event, kept until `save()`, which writes them and
    flushes at most every `flush_seconds` (TensorBoard reloads every 30 s), and at the end; a run killed with -9 loses
    at most that many seconds of scalars, which its resume writes again."""

    def __init__(
        self,
        save_dir: str = RUNS,
        name: str | None = None,
        version: int | str | None = None,
        prefix: str = "",
        flush_seconds: NonNegativeFloat = 5.0,
        **tensorboard_logger,
    ) -> None:
        super().__init__(save_dir, name, version, prefix=prefix, **tensorboard_logger)
        self.flush_seconds, self._flushed, self._pending = flush_seconds, -math.inf, []
        self._tag = lambda key: f"{prefix}{self.LOGGER_JOIN_CHAR}{key}" if prefix else key  # as Lightning names them

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        metrics = {k: v.item() if isinstance(v, Tensor) else v for k, v in metrics.items()}
        scalars = {k: v for k, v in metrics.items() if isinstance(v, int | float)}
        if scalars:
            values = [Summary.Value(tag=self._tag(k), simple_value=v) for k, v in scalars.items()]
            self._pending.append((Summary(value=values), step, time.time()))
        if len(scalars) < len(metrics):  # a dict (add_scalars), or a value Lightning's own refuses in its words
            super().log_metrics({k: v for k, v in metrics.items() if k not in scalars}, step)

    @rank_zero_only
    def save(self) -> None:
        now = time.monotonic()
        if now - self._flushed >= self.flush_seconds:
            self._flushed = now
            self._write_pending()
            super().save()

    @rank_zero_only
    def finalize(self, status: str) -> None:
        self._write_pending()  # a failed or stopped fit's too: Lightning finalizes its loggers on every exit
        super().finalize(status)

    def _write_pending(self) -> None:
        # Handed to the writer's thread together: an event at a time, that thread woke three times a step.
        writer = tensorboard_file_writer(self.experiment)
        for summary, step, walltime in self._pending:
            writer.add_summary(summary, step, walltime)
        self._pending.clear()
