"""The networks: plain PyTorch, no Lightning. Each maps normalized images (N, 1, 8, 8) to logits (N, classes),
and takes the class count as its first argument (DigitsClassifier passes it in)."""

import torch
from torch import nn


class DigitsCNN(nn.Module):
    def __init__(
        self,
        num_classes: int,
        # (64, 128) made 28 cross-validation errors in 30 epochs vs 36 for (32, 64) in 50, at about twice the
        # time; the recipe study's Pareto table is in docs/results.md.
        channels: tuple[int, int] = (32, 64),
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        c1, c2 = channels
        self.features = nn.Sequential(
            nn.Conv2d(1, c1, kernel_size=3, padding=1),  # (N, c1, 8, 8)
            nn.BatchNorm2d(c1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # (N, c1, 4, 4)
            nn.Conv2d(c1, c2, kernel_size=3, padding=1),  # (N, c2, 4, 4)
            nn.BatchNorm2d(c2),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),  # (N, c2)
        )
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(c2, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))  # (N, 1, 8, 8) -> (N, num_classes) logits


class MLP(nn.Module):
    """A baseline without convolutions: the flattened pixels through fully connected layers."""

    def __init__(self, num_classes: int, hidden: tuple[int, ...] = (128, 64), dropout: float = 0.1) -> None:
        super().__init__()
        layers, width = [nn.Flatten()], 8 * 8  # (N, 1, 8, 8) -> (N, 64)
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU(), nn.Dropout(dropout)]
            width = size
        self.layers = nn.Sequential(*layers, nn.Linear(width, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)  # (N, 1, 8, 8) -> (N, num_classes) logits
