"""Pictures for whichever logger a run has, in the form it shows them: TensorBoard's Images and Histograms tabs,
MLflow's images with a step (no histograms), W&B images and histograms in the run's history. Rank zero only."""

import numpy as np
import torch
from lightning.pytorch.loggers import MLFlowLogger, TensorBoardLogger, WandbLogger
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

BINS = "auto"  # numpy's estimator: ~1.4 KB for a conv kernel's histogram, ~9 KB with torch's default bins


def write_pictures(trainer, pictures: dict, step: int) -> None:
    for logger in trainer.loggers if trainer.is_global_zero and pictures else ():  # none: no W&B history row
        if isinstance(logger, TensorBoardLogger):
            for tag, picture in pictures.items():
                if isinstance(picture, Figure):
                    logger.experiment.add_figure(tag, picture, step)
                else:
                    logger.experiment.add_image(tag, as_image(picture), step)
        elif isinstance(logger, MLFlowLogger):
            for tag, picture in pictures.items():  # images with a step: the UI pages through them
                logger.experiment.log_image(logger.run_id, _pixels(picture), key=tag, step=step)
        elif isinstance(logger, WandbLogger):  # media through log_metrics, as WandbLogger.log_image logs them
            import wandb

            logger.log_metrics({tag: wandb.Image(_pixels(picture)) for tag, picture in pictures.items()}, step)


def write_histograms(trainer, values: dict[str, torch.Tensor], step: int) -> None:
    for logger in trainer.loggers if trainer.is_global_zero else ():  # MLflow has no histograms
        if isinstance(logger, TensorBoardLogger):
            for tag, tensor in values.items():
                logger.experiment.add_histogram(tag, tensor, step, bins=BINS)
        elif isinstance(logger, WandbLogger):  # media through log_metrics, as WandbLogger.log_image logs them
            import wandb

            logger.log_metrics({tag: wandb.Histogram(tensor.cpu().numpy()) for tag, tensor in values.items()}, step)


def as_image(picture: Figure | torch.Tensor) -> torch.Tensor:
    """A figure rendered, or an (H, W) / (C, H, W) image in [0, 1], as (3, H, W) floats."""
    if isinstance(picture, Figure):
        canvas = FigureCanvasAgg(picture)
        canvas.draw()
        return torch.from_numpy(np.asarray(canvas.buffer_rgba())[..., :3].copy()).permute(2, 0, 1).float() / 255
    image = picture.detach().float().cpu()
    image = image[None] if image.ndim == 2 else image
    return image.expand(3, *image.shape[1:]) if image.shape[0] == 1 else image[:3]


def _pixels(picture) -> np.ndarray:
    """(H, W, 3) bytes."""
    return (as_image(picture).clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()
