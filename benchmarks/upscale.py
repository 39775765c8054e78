"""A synthetic upscale of the digits for the scale benchmark: shifted and noised copies, through the same pipeline."""

import torch

from project.data import DigitsDataModule


class UpscaledDigits(DigitsDataModule):
    """`copies` versions of each digit, each shifted by up to a pixel and with Gaussian noise (std 0.5 of 16).

    Labels keep their class, so it stays a digits task; the split, statistics and batching are the project's.
    """

    def __init__(self, copies: int = 100, **kwargs) -> None:
        super().__init__(**kwargs)
        self.copies = copies

    def load(self) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = super().load()  # (1797, 8, 8)
        generator = torch.Generator().manual_seed(0)
        padded = torch.nn.functional.pad(images, (1, 1, 1, 1))  # (1797, 10, 10): room to shift by one pixel
        copies = []
        for _ in range(self.copies):
            dy, dx = torch.randint(0, 3, (2,), generator=generator).tolist()
            shifted = padded[:, dy : dy + 8, dx : dx + 8]
            copies.append((shifted + 0.5 * torch.randn(shifted.shape, generator=generator)).clamp(0, 16))
        return torch.cat(copies), labels.repeat(self.copies)
