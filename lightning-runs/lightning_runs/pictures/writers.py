"""Pictures for whichever logger a run has, each in the form it shows: TensorBoard's Images, Histograms and Text
tabs; MLflow's images with a step (its run page's image charts, stored as artifacts under images/) and the config as
an artifact, no histograms; W&B images and histograms in the run's history. The CSV logger shows none.

Only rank zero gets a writer; fast_dev_run replaces the loggers with a dummy one, which gets none either.
"""

from pathlib import Path

import numpy as np
import torch
from lightning.pytorch.loggers import MLFlowLogger, TensorBoardLogger, WandbLogger
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

# numpy's bin estimator: ~1.4 KB for a conv kernel's histogram instead of ~9 KB with torch's default bins
BINS = "auto"


def tensorboard(trainer) -> TensorBoardLogger | None:
    """The run's TensorBoardLogger on rank zero, else None (other ranks, fast_dev_run, or another logger)."""
    if not trainer.is_global_zero:
        return None
    return next((logger for logger in trainer.loggers if isinstance(logger, TensorBoardLogger)), None)


def picture_writers(trainer) -> list:
    """A writer for each of the run's loggers that shows pictures, on rank zero; empty elsewhere."""
    if not trainer.is_global_zero:
        return []
    kinds = {TensorBoardLogger: TensorBoardPictures, MLFlowLogger: MLflowPictures, WandbLogger: WandbPictures}
    return [kind(logger) for logger in trainer.loggers for cls, kind in kinds.items() if isinstance(logger, cls)]


class TensorBoardPictures:
    def __init__(self, logger: TensorBoardLogger) -> None:
        self.writer = logger.experiment

    def images(self, images: dict[str, torch.Tensor], step: int) -> None:  # each (3, H, W) in [0, 1]
        for tag, image in images.items():
            self.writer.add_image(tag, image, step)

    def figures(self, figures: dict[str, Figure], step: int) -> None:
        for tag, figure in figures.items():
            self.writer.add_figure(tag, figure, step)

    def histograms(self, values: dict[str, torch.Tensor], step: int) -> None:
        for tag, tensor in values.items():
            self.writer.add_histogram(tag, tensor, step, bins=BINS)

    def config(self, path: Path) -> None:
        lines = path.read_text().splitlines()  # indented four spaces: a code block in TensorBoard's markdown
        self.writer.add_text("config", "".join(f"    {line}\n" for line in lines), 0)


class MLflowPictures:
    def __init__(self, logger: MLFlowLogger) -> None:
        self.client, self.run_id = logger.experiment, logger.run_id

    def images(self, images: dict[str, torch.Tensor], step: int) -> None:
        for tag, image in images.items():
            self.client.log_image(self.run_id, _pixels(image), key=tag, step=step)

    def figures(self, figures: dict[str, Figure], step: int) -> None:
        # As images with a step, not log_figure's one file per name: the UI then pages through them by step.
        for tag, figure in figures.items():
            self.client.log_image(self.run_id, _rendered(figure), key=tag, step=step)

    def histograms(self, values: dict[str, torch.Tensor], step: int) -> None:
        pass  # MLflow has no histograms

    def config(self, path: Path) -> None:
        self.client.log_artifact(self.run_id, str(path))  # config.yaml, config.fit.yaml, ...: as in the run folder


class WandbPictures:
    """Each call one row of the run's history at `step` (its x-axis is trainer/global_step, as for the scalars)."""

    def __init__(self, logger: WandbLogger) -> None:
        self.logger = logger

    def images(self, images: dict[str, torch.Tensor], step: int) -> None:
        import wandb

        self.logger.log_metrics({tag: wandb.Image(_pixels(image)) for tag, image in images.items()}, step)

    def figures(self, figures: dict[str, Figure], step: int) -> None:
        import wandb

        # Rendered here: wandb.Image(figure) goes through pyplot, which the figures never touch.
        self.logger.log_metrics({tag: wandb.Image(_rendered(figure)) for tag, figure in figures.items()}, step)

    def histograms(self, values: dict[str, torch.Tensor], step: int) -> None:
        import wandb

        self.logger.log_metrics({tag: wandb.Histogram(tensor.cpu().numpy()) for tag, tensor in values.items()}, step)

    def config(self, path: Path) -> None:
        pass  # its config panel lists the hyperparameters Lightning logs


def _pixels(image: torch.Tensor) -> np.ndarray:
    """(3, H, W) floats in [0, 1] -> (H, W, 3) bytes."""
    return (image.clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).cpu().numpy()


def _rendered(figure: Figure) -> np.ndarray:
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()  # (H, W, 3) bytes
