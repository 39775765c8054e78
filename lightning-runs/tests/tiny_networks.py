"""The tiny task with a network of the user's, as a project's model takes one: `WithNetwork`, TinyClassifier around a
factory of (class count, sample shape) chosen by class path (`--model.network tiny_networks.Hidden`), and networks for
it; `cli_main`, TinyCLI with WithNetwork as its model, where `--model.network` is an option of every command. For the
tests of run names, of what a class path may name, and of sizes that would not fit in memory.
"""

import itertools
import math
from collections.abc import Callable, Sequence

import torch
from lightning.pytorch.callbacks import Callback
from torch import nn

from tiny_tasks import TRAINER_DEFAULTS, TinyClassifier, TinyCLI, TinyDataModule


class OneLayer(nn.Module):
    def __init__(self, num_classes: int, input_shape: tuple[int, ...]) -> None:
        super().__init__()
        self.layer = nn.Linear(math.prod(input_shape), num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x.flatten(1))  # (N, *input_shape) -> (N, num_classes) logits


class Hidden(OneLayer):
    """Another network: hidden layers of the given `widths` (one of 8 by default), sizes a user may get wrong."""

    def __init__(self, num_classes: int, input_shape: tuple[int, ...], widths: tuple[int, ...] = (8,)) -> None:
        super().__init__(num_classes, (widths[-1],))
        sizes = [math.prod(input_shape), *widths]
        layers = [nn.Sequential(nn.Linear(a, b), nn.ReLU()) for a, b in itertools.pairwise(sizes)]
        self.hidden = nn.Sequential(nn.Flatten(), *layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(self.hidden(x))


class GraphBreak(OneLayer):
    """A network torch.compile cannot take whole: a graph break in its forward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch._dynamo.graph_break()
        return super().forward(x)


class WithNetwork(TinyClassifier):
    """The tiny classifier around a network it is given as a factory of (class count, sample shape), OneLayer unless
    told otherwise."""

    def __init__(
        self,
        network: Callable[[int, tuple[int, ...]], nn.Module] = OneLayer,
        num_classes: int = 3,
        input_shape: tuple[int, ...] = (4,),
        lr: float = 0.05,
    ) -> None:
        super().__init__(num_classes, input_shape, lr)
        self.layer = network(num_classes, tuple(input_shape))


def cli_main(args: list[str] | None = None, callbacks: Sequence[Callback] = ()) -> TinyCLI:
    return TinyCLI(WithNetwork, TinyDataModule, trainer_defaults=TRAINER_DEFAULTS, callbacks=callbacks, args=args)
