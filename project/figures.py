"""The classifier's pictures for TensorBoard (and MLflow, W&B): its confusion matrix and its misclassified samples.
DigitsClassifier.figures returns them; the library's Figures callback writes them every N epochs."""

import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torchvision.utils import make_grid

COLUMNS = 8  # samples a row
SIDE = 32  # pixels a sample is upscaled to at least (nearest neighbour keeps an 8x8 digit sharp)


class Misclassified:
    """The first `limit` samples of an epoch whose predicted class is not their label, on the CPU."""

    def __init__(self, limit: int = 32) -> None:
        self.limit = limit
        self.reset()

    def reset(self) -> None:
        self.samples, self.labels, self.predicted = [], [], []

    def update(self, samples: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor) -> None:
        room = self.limit - sum(map(len, self.samples))
        if room > 0:
            predicted = logits.argmax(dim=1)
            wrong = (predicted != labels).nonzero().flatten()[:room]
            for kept, values in zip(
                (self.samples, self.labels, self.predicted), (samples, labels, predicted), strict=True
            ):
                kept.append(values[wrong].detach().cpu())

    def figure(self) -> Figure | None:
        """A grid of the samples, each captioned `true→predicted`; None where there are none, or they are no images
        ((H, W) or (C, H, W) samples)."""
        if not self.samples or not sum(map(len, self.samples)) or self.samples[0].ndim not in (3, 4):
            return None
        images, labels, predicted = (torch.cat(kept) for kept in (self.samples, self.labels, self.predicted))
        images = images[:, None] if images.ndim == 3 else images.mean(dim=1, keepdim=True)  # (N, 1, H, W)
        low, high = images.amin(dim=(1, 2, 3), keepdim=True), images.amax(dim=(1, 2, 3), keepdim=True)
        images = (images - low) / (high - low).clamp(min=1e-12)  # each sample scaled to [0, 1] on its own
        scale = max(1, -(-SIDE // min(images.shape[-2:])))
        images = F.interpolate(images, scale_factor=scale, mode="nearest")
        grid = make_grid(images, nrow=COLUMNS, padding=8, pad_value=1.0)  # (3, H, W)
        figure = Figure(figsize=(grid.shape[2] / 48, grid.shape[1] / 48), dpi=64)
        axes = figure.add_axes((0, 0, 1, 1))
        axes.imshow(grid.permute(1, 2, 0).numpy())
        axes.set_axis_off()
        cell_h, cell_w = images.shape[2] + 8, images.shape[3] + 8
        for i, (true, guess) in enumerate(zip(labels.tolist(), predicted.tolist(), strict=True)):
            row, column = divmod(i, COLUMNS)
            axes.text(column * cell_w + cell_w / 2 + 4, row * cell_h + 7, f"{true}→{guess}", ha="center", va="center",
                      fontsize=7, color="crimson")  # fmt: skip
        return figure
