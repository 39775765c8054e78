"""What makes a run faster without the owner's code changing: torch.compile as one switch (compiling)."""

from lightning_runs.speed.compiling import Compile

__all__ = ["Compile"]
