"""The networks: plain PyTorch, no Lightning. Each maps normalized samples (N, *input_shape) to logits
(N, num_classes), and takes the class count and one sample's shape first (DigitsClassifier passes both in, from
the data)."""

import math

import torch
from torch import nn


class DigitsCNN(nn.Module):
    """Images of any size: (H, W) grey or (C, H, W) with C channels."""

    def __init__(
        self,
        num_classes: int,
        input_shape: tuple[int, ...],
        # (64, 128) made 28 cross-validation errors in 30 epochs vs 36 for (32, 64) in 50, at about twice the
        # time; the recipe study's Pareto table is in docs/results.md.
        channels: tuple[int, int] = (32, 64),
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        if len(input_shape) not in (2, 3):
            raise ValueError(
                f"DigitsCNN takes images, (H, W) or (C, H, W) samples, not {tuple(input_shape)}; choose another"
                " --model.network (project.networks.MLP takes any shape)"
            )
        if min(input_shape[-2:]) < 2:  # its pooling halves H and W: a 1-pixel side would leave nothing to convolve
            raise ValueError(f"DigitsCNN takes images of at least 2 x 2 pixels, not {tuple(input_shape[-2:])}")
        c1, c2 = channels
        self.features = nn.Sequential(
            nn.Conv2d(1 if len(input_shape) == 2 else input_shape[0], c1, kernel_size=3, padding=1),  # (N, c1, H, W)
            nn.BatchNorm2d(c1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # (N, c1, H/2, W/2)
            nn.Conv2d(c1, c2, kernel_size=3, padding=1),  # (N, c2, H/2, W/2)
            nn.BatchNorm2d(c2),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),  # (N, c2)
        )
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(c2, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.unsqueeze(1) if x.ndim == 3 else x  # (N, H, W) -> (N, 1, H, W)
        return self.head(self.features(x))  # (N, C, H, W) -> (N, num_classes) logits


class MLP(nn.Module):
    """A baseline without convolutions, for samples of any shape: the flattened values through fully connected
    layers."""

    def __init__(
        self,
        num_classes: int,
        input_shape: tuple[int, ...],
        hidden: tuple[int, ...] = (128, 64),
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]  # (N, *input_shape) -> (N, prod(input_shape))
        width = math.prod(input_shape)
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU(), nn.Dropout(dropout)]
            width = size
        self.layers = nn.Sequential(*layers, nn.Linear(width, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)  # (N, *input_shape) -> (N, num_classes) logits
