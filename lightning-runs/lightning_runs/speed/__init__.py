"""What makes a run faster with no change to the owner's code: Compile."""

from lightning_runs.speed.compile import Compile

__all__ = ["Compile"]
