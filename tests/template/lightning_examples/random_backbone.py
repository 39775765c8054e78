"""`TORCH_HOME=<a folder of its own> python -m lightning_examples.random_backbone`: a randomly initialised resnet50
written where torchvision keeps its DEFAULT weights ($TORCH_HOME/hub/checkpoints), so that the fine-tuning example,
which asks for those weights, builds with no network and no download. Never into a TORCH_HOME holding real weights."""

import os
from pathlib import Path

import torch
from torchvision.models import ResNet50_Weights, resnet50


def write_random_backbone() -> Path:
    path = Path(torch.hub.get_dir(), "checkpoints", Path(ResNet50_Weights.DEFAULT.url).name)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(resnet50(weights=None).state_dict(), path)
    return path


if __name__ == "__main__":
    if "TORCH_HOME" not in os.environ:
        raise SystemExit("set TORCH_HOME to a folder of its own: random weights go where pretrained ones would")
    print(write_random_backbone())
