"""A run's parameters for every logger: the trainer settings that change what a fit computes (Lightning logs the
module's and the data's hyperparameters, never these: a 2- and a 50-epoch run looked alike), and TensorBoard's HPARAMS
entry with the scores the runs are compared by: `hp/best_<monitor>` and its test counterpart (`val_loss` ->
`hp/test_loss`)."""

import math

from lightning.fabric.utilities.logger import _flatten_dict
from lightning.pytorch.loggers import TensorBoardLogger

from lightning_runs.checkpoints.init_from import InitFrom
from lightning_runs.configs import test_metric
from lightning_runs.loggers.run_folder import parameters
from lightning_runs.private import tensorboard_file_writer


def score_tag(metric: str) -> str:
    return f"hp/{metric.replace('/', '_')}"  # TensorBoard's HPARAMS table reads scalars of these names


def score_tags(monitor: str | None) -> list[str]:
    test = test_metric(monitor)
    return ([score_tag(f"best_{monitor}")] if monitor else []) + ([score_tag(test)] if test else [])


def log_parameters(trainer, pl_module) -> None:
    """As a fit starts: the trainer settings to every logger, and TensorBoard's HPARAMS entry, its scores declared as
    NaN now and filled in when known (TensorBoard shows the latest)."""
    settings: dict = {"trainer": {
        "max_epochs": trainer.max_epochs, "precision": trainer.precision, "devices": trainer.num_devices,
        "num_nodes": trainer.num_nodes, "strategy": type(trainer.strategy).__name__,
        "accumulate_grad_batches": trainer.accumulate_grad_batches, "gradient_clip_val": trainer.gradient_clip_val,
    }}  # fmt: skip
    # Where a fine-tuned run started (InitFrom), beside its settings: compared in TensorBoard's HPARAMS table.
    started = [{"init_from": str(c.path), "freeze": c.freeze} for c in trainer.callbacks if isinstance(c, InitFrom)]
    settings |= started[0] if started else {}
    for logger in trainer.loggers:
        logger.log_hyperparams(settings)
    logger = next((one for one in trainer.loggers if isinstance(one, TensorBoardLogger)), None)
    if logger is None or not trainer.is_global_zero:
        return
    # Imported here, by a fit with TensorBoard only: TensorBoard's hparams plugin pulls in absl and its TensorFlow stub,
    # ~1% of every command's start-up (`fit --help`, `runs`) otherwise.
    from tensorboard.plugins.hparams import summary_v2 as hparams_api  # .api would import TensorFlow's Keras

    best = next((c for c in trainer.checkpoint_callbacks if getattr(c, "monitor", None)), None)
    scores = score_tags(best and best.monitor)
    params = {**pl_module.hparams, **(trainer.datamodule.hparams if trainer.datamodule else {}), **settings}
    # None leaves its cell empty, as torch's writer does: a column keeps one type. A list shows as its text.
    values = {k: v if isinstance(v, bool | int | float | str) else str(v)
              for k, v in _flatten_dict(parameters(params)).items() if v is not None}  # fmt: skip
    # Each column typed by its value (a domain of no values: the type alone). Lightning's `log_hyperparams(params,
    # metrics)` writes through torch's `hparams`, which types a bool as a number, and writes nothing without metrics.
    columns = [hparams_api.HParam(key, hparams_api.Discrete([], dtype=type(v))) for key, v in values.items()]
    writer = tensorboard_file_writer(logger.experiment)
    writer.add_summary(hparams_api.hparams_config_pb(columns, [hparams_api.Metric(tag) for tag in scores]), 0)
    writer.add_summary(hparams_api.hparams_pb(values), 0)
    logger.log_metrics(dict.fromkeys(scores, math.nan), step=0)


def log_scores(trainer, scores: dict) -> None:
    """To every logger: a scalar in TensorBoard (its HPARAMS entry), a metric in MLflow, W&B and metrics.csv."""
    if trainer.is_global_zero and scores:
        for logger in trainer.loggers:
            logger.log_metrics(scores, step=trainer.global_step)
