"""Pictures for whichever logger a run has, in the form it shows them: TensorBoard's Images and Histograms tabs,
MLflow's images with a step (no histograms), W&B images and histograms in the run's history. Rank zero only."""

import numpy as np
import torch
from lightning.pytorch.loggers import MLFlowLogger, TensorBoardLogger, WandbLogger
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

BINS = "auto"  # numpy's estimator: ~1.4 KB for a conv kernel's histogram, ~9 KB with torch's default bins


def picture_writers(trainer) -> list:
    if not trainer.is_global_zero:
        return []
    kinds = {TensorBoardLogger: TensorBoardPictures, MLFlowLogger: MLflowPictures, WandbLogger: WandbPictures}
    return [kind(logger) for logger in trainer.loggers for cls, kind in kinds.items() if isinstance(logger, cls)]


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


class TensorBoardPictures:
    def __init__(self, logger: TensorBoardLogger) -> None:
        self.writer = logger.experiment

    def pictures(self, pictures: dict, step: int) -> None:
        for tag, picture in pictures.items():
            if isinstance(picture, Figure):
                self.writer.add_figure(tag, picture, step)
            else:
                self.writer.add_image(tag, as_image(picture), step)

    def histograms(self, values: dict[str, torch.Tensor], step: int) -> None:
        for tag, tensor in values.items():
            self.writer.add_histogram(tag, tensor, step, bins=BINS)


class MLflowPictures:
    def __init__(self, logger: MLFlowLogger) -> None:
        self.client, self.run_id = logger.experiment, logger.run_id

    def pictures(self, pictures: dict, step: int) -> None:
        for tag, picture in pictures.items():  # images with a step: the UI pages through them
            self.client.log_image(self.run_id, _pixels(picture), key=tag, step=step)

    def histograms(self, values: dict[str, torch.Tensor], step: int) -> None:
        pass  # MLflow has no histograms


class WandbPictures:
    def __init__(self, logger: WandbLogger) -> None:
        self.logger = logger

    def pictures(self, pictures: dict, step: int) -> None:
        import wandb

        self.logger.log_metrics({tag: wandb.Image(_pixels(picture)) for tag, picture in pictures.items()}, step)  # ty: ignore[invalid-argument-type]  # W&B logs media through log_metrics, as WandbLogger.log_image does

    def histograms(self, values: dict[str, torch.Tensor], step: int) -> None:
        import wandb

        self.logger.log_metrics({tag: wandb.Histogram(tensor.cpu().numpy()) for tag, tensor in values.items()}, step)  # ty: ignore[invalid-argument-type]  # W&B logs media through log_metrics, as WandbLogger.log_image does
