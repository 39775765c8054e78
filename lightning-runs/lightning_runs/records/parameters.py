"""What a run's loggers record as its parameters: the module's and the data's hyperparameters, which Lightning logs
itself, and the trainer settings that change what the run computes, which Lightning logs nowhere (without them a 2-
and a 50-epoch run look alike in TensorBoard's HPARAMS tab, in MLflow and in W&B).

The settings are the Trainer's own values once it is built (`devices: auto` is logged as the count it chose), under
`trainer`: `trainer/max_epochs` in TensorBoard and MLflow, `trainer.max_epochs` in W&B, a `trainer:` block in
hparams.yaml. LightningCLI's own keys (`_instantiator`, `_class_path`) are no parameters: the loggers leave them out
(loggers/), and so does the HPARAMS entry.
"""

import math

from lightning.fabric.utilities.logger import _convert_params, _flatten_dict
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2

# tensorboard.plugins.hparams.api re-exports this module, but imports TensorFlow's Keras on the way.
from tensorboard.plugins.hparams import summary_v2 as hparams_api

from lightning_runs.pictures.writers import tensorboard
from lightning_runs.private import saved_arguments, tensorboard_file_writer

# Each HPARAMS column's type, by its value's; bool before int, which it subclasses (torch's own writer has them the
# other way round and shows True as 1.0).
TYPES = ((bool, api_pb2.DATA_TYPE_BOOL), ((int, float), api_pb2.DATA_TYPE_FLOAT64), (str, api_pb2.DATA_TYPE_STRING))


def trainer_settings(trainer) -> dict:
    """The Trainer's settings that change what a fit computes, as it resolved them."""
    return {
        "max_epochs": trainer.max_epochs,
        "precision": trainer.precision,
        "devices": trainer.num_devices,
        "num_nodes": trainer.num_nodes,
        "strategy": type(trainer.strategy).__name__,
        "accumulate_grad_batches": trainer.accumulate_grad_batches,
        "gradient_clip_val": trainer.gradient_clip_val,
    }


def log_parameters(trainer, pl_module, scores: list[str]) -> None:
    """As a fit starts: the trainer settings to every logger, and TensorBoard's HPARAMS entry, with every parameter
    and the `scores` it is compared by (declared as NaN now, filled in when known; TensorBoard shows the latest)."""
    settings = {"trainer": trainer_settings(trainer)}
    for logger in trainer.loggers:  # Lightning logs the module's and the data's hyperparameters to each next
        logger.log_hyperparams(settings)
    logger = tensorboard(trainer)
    if logger is None:
        return
    params = {**pl_module.hparams, **(trainer.datamodule.hparams if trainer.datamodule else {}), **settings}
    # None (no clipping, no file) leaves its cell empty, as torch's writer does: a column keeps one type.
    values = {key: _value(value) for key, value in _flatten_dict(parameters(params)).items() if value is not None}
    writer = tensorboard_file_writer(logger.experiment)
    writer.add_summary(_experiment(values, scores), 0)
    writer.add_summary(hparams_api.hparams_pb(values), 0)
    logger.log_metrics(dict.fromkeys(scores, math.nan), step=0)


def parameters(params) -> dict:
    """A run's parameters without LightningCLI's own keys: `_instantiator` (how it rebuilds the module, in every
    checkpoint) is no setting of the run."""
    return saved_arguments(_convert_params(params))


def _value(value) -> bool | int | float | str:
    """A value HPARAMS can show as itself; anything else (a list) as its text, as Lightning shows it."""
    return value if isinstance(value, bool | int | float | str) else str(value)


def _experiment(values: dict, scores: list[str]) -> Summary:
    """The HPARAMS columns: each parameter with its type, and the scores. summary_v2's hparams_config_pb gives a
    column a type only with a domain, and a domain of this run's value alone would hide every other run's."""
    infos = [api_pb2.HParamInfo(name=key, type=_type(value)) for key, value in values.items()]
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=tag)) for tag in scores]
    data = plugin_data_pb2.HParamsPluginData(experiment=api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics))
    summary = Summary()
    summary.value.add(
        tag=metadata.EXPERIMENT_TAG, metadata=metadata.create_summary_metadata(data), tensor=metadata.NULL_TENSOR
    )
    return summary


def _type(value) -> int:
    return next(kind for types, kind in TYPES if isinstance(value, types))
