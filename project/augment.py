"""Train-time augmentation of whole batches on their device (no Lightning here: benchmarks use it as it is)."""

import math

import torch
import torch.nn.functional as F


def random_affine(images: torch.Tensor, degrees: float, shift: float) -> torch.Tensor:
    """Rotate each image ((N, H, W) or (N, C, H, W)) by up to ±`degrees` and shift it by up to ±`shift` pixels,
    each with its own draw.

    torchvision's v2.RandomAffine draws one set of parameters per call, so a whole batch would move together
    (measured worse on the validation splits); per-sample parameters cost one grid_sample per batch.
    """
    planes = images.unsqueeze(1) if images.ndim == 3 else images  # (N, C, H, W)
    n, channels, height, width = planes.shape
    # In the images' dtype, not the default one: under --trainer.precision 64 the default is float64.
    like: dict = {"device": images.device, "dtype": images.dtype}
    angle = (torch.rand(n, **like) * 2 - 1) * math.radians(degrees)
    # affine_grid works in [-1, 1] coordinates: one pixel is 2 / size.
    pixel = torch.tensor([2 / width, 2 / height], **like)
    offset = (torch.rand(n, 2, **like) * 2 - 1) * shift * pixel
    cos, sin = angle.cos(), angle.sin()
    theta = torch.stack([torch.stack([cos, -sin, offset[:, 0]], 1), torch.stack([sin, cos, offset[:, 1]], 1)], 1)
    grid = F.affine_grid(theta, [n, channels, height, width], align_corners=False)  # (N, H, W, 2)
    return F.grid_sample(planes, grid, align_corners=False).reshape(images.shape)
