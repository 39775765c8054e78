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
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2
    from tensorboard.plugins.hparams import summary_v2 as hparams_api  # .api would import TensorFlow's Keras

    # Each HPARAMS column's type, by its value's: bool before int, which it subclasses.
    types = ((bool, api_pb2.DATA_TYPE_BOOL), ((int, float), api_pb2.DATA_TYPE_FLOAT64), (str, api_pb2.DATA_TYPE_STRING))
    best = next((c for c in trainer.checkpoint_callbacks if getattr(c, "monitor", None)), None)
    scores = score_tags(best and best.monitor)
    params = {**pl_module.hparams, **(trainer.datamodule.hparams if trainer.datamodule else {}), **settings}
    # None leaves its cell empty, as torch's writer does: a column keeps one type. A list shows as its text.
    values = {k: v if isinstance(v, bool | int | float | str) else str(v)
              for k, v in _flatten_dict(parameters(params)).items() if v is not None}  # fmt: skip
    infos = [api_pb2.HParamInfo(name=key, type=next(t for kinds, t in types if isinstance(v, kinds)))
             for key, v in values.items()]  # fmt: skip
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=tag)) for tag in scores]
    data = plugin_data_pb2.HParamsPluginData(experiment=api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics))
    experiment = Summary()
    experiment.value.add(
        tag=metadata.EXPERIMENT_TAG, metadata=metadata.create_summary_metadata(data), tensor=metadata.NULL_TENSOR
    )
    writer = tensorboard_file_writer(logger.experiment)
    writer.add_summary(experiment, 0)
    writer.add_summary(hparams_api.hparams_pb(values), 0)
    logger.log_metrics(dict.fromkeys(scores, math.nan), step=0)


def log_scores(trainer, scores: dict) -> None:
    """To every logger: a scalar in TensorBoard (its HPARAMS entry), a metric in MLflow, W&B and metrics.csv."""
    if trainer.is_global_zero and scores:
        for logger in trainer.loggers:
            logger.log_metrics(scores, step=trainer.global_step)
