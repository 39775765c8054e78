"""DataModules made here in place of the examples' downloads (MNIST, the cats and dogs zip, WikiText-2): batches of the
same shapes, generated from a seed. Each training loader is torchdata's StatefulDataLoader, so that a fit stopped
inside an epoch resumes at its next batch."""

import io
import os
from pathlib import Path

import torch
from lightning.pytorch import LightningDataModule
from lightning.pytorch.demos.transformer import WikiText2
from PIL import Image
from torch.utils.data import DataLoader, TensorDataset, random_split
from torchdata.stateful_dataloader import StatefulDataLoader
from torchvision import transforms

from lightning_runs.checkpoints import WorkerRandomState

from lightning_examples.computer_vision_fine_tuning import CatDogImageDataModule


class FakeMNIST(LightningDataModule):
    """`n` images as MNIST's batches hold them: ((N, 1, 28, 28) in [0, 1], (N,) labels 0-9), each its class's fixed
    pattern plus noise, split 80/10/10 for train, validation and test (predict: the test images)."""

    def __init__(self, n: int = 512, batch_size: int = 32, seed: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(self.hparams.seed)
        patterns = torch.rand(10, 1, 28, 28, generator=generator)
        labels = torch.randint(10, (self.hparams.n,), generator=generator)
        noise = 0.3 * torch.randn(self.hparams.n, 1, 28, 28, generator=generator)
        images = (patterns[labels] + noise).clamp(0, 1)
        split = random_split(TensorDataset(images, labels), [0.8, 0.1, 0.1], torch.Generator().manual_seed(0))
        self.train, self.val, self.test = split

    def train_dataloader(self):
        return StatefulDataLoader(self.train, batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=self.hparams.batch_size)

    def test_dataloader(self):
        return DataLoader(self.test, batch_size=self.hparams.batch_size)

    def predict_dataloader(self):
        return DataLoader(self.test, batch_size=self.hparams.batch_size)


class LocalCatDogImages(CatDogImageDataModule):
    """The fine-tuning example's own DataModule, its download replaced by `images` small PNGs a class and split
    (cats darker than dogs) written where the zip would unpack, and its 224-pixel resize by `size` (a CPU trains on
    these in seconds); its random flip kept."""

    def __init__(
        self, dl_path: str = "data", num_workers: int = 0, batch_size: int = 8, images: int = 24, size: int = 32
    ) -> None:
        super().__init__(dl_path=dl_path, num_workers=num_workers, batch_size=batch_size)
        self.images, self.size = images, size

    def prepare_data(self) -> None:
        generator = torch.Generator().manual_seed(0)
        for split in ("train", "validation"):
            for label, brightness in (("cats", 0.3), ("dogs", 0.7)):
                folder = self.data_path / split / label
                folder.mkdir(parents=True, exist_ok=True)
                for i in range(self.images):
                    pixels = (brightness + 0.3 * torch.randn(48, 48, 3, generator=generator)).clamp(0, 1)
                    png = io.BytesIO()
                    Image.fromarray(pixels.mul(255).byte().numpy()).save(png, format="PNG")
                    write_once(folder / f"{i}.png", png.getvalue())

    @property
    def train_transform(self):
        resize, flip = transforms.Resize((self.size, self.size)), transforms.RandomHorizontalFlip()
        return transforms.Compose([resize, flip, transforms.ToTensor(), self.normalize_transform])

    @property
    def valid_transform(self):
        resize = transforms.Resize((self.size, self.size))
        return transforms.Compose([resize, transforms.ToTensor(), self.normalize_transform])

    def train_dataloader(self):
        dataset = self.create_dataset(self.data_path / "train", self.train_transform)
        dataset = WorkerRandomState(dataset)  # the flips drawn in the workers resume too
        return StatefulDataLoader(dataset, batch_size=self._batch_size, num_workers=self._num_workers, shuffle=True)


class LocalWikiText2(LightningDataModule):
    """The transformer demo's WikiText2 over a text of `words` words written here where its download would go
    (data/wikitext-2.txt): the demo model's own prepare_data then finds the file and downloads nothing. The vocabulary
    is the `words` words and <eos>: give the model `vocab_size: words + 1`."""

    def __init__(self, words: int = 60, lines: int = 200, block_size: int = 35, batch_size: int = 16) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.path = Path("data/wikitext-2.txt")  # where WikiText2's default data_dir puts it

    def prepare_data(self) -> None:
        generator = torch.Generator().manual_seed(0)
        vocabulary = [f"w{i}" for i in range(self.hparams.words)]
        lines = [" ".join(vocabulary)]  # every word at least once: the vocabulary's size is known
        for _ in range(self.hparams.lines):
            length = int(torch.randint(5, 20, (1,), generator=generator))
            ids = torch.randint(self.hparams.words, (length,), generator=generator)
            lines.append(" ".join(vocabulary[i] for i in ids))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_once(self.path, ("\n".join(lines) + "\n").encode())

    def setup(self, stage: str) -> None:
        self.dataset = WikiText2(self.path.parent, block_size=self.hparams.block_size, download=False)

    def train_dataloader(self):
        return StatefulDataLoader(self.dataset, batch_size=self.hparams.batch_size, shuffle=True)


def write_once(path: Path, content: bytes) -> None:
    """`content` written beside `path`, then renamed to it, unless it exists: runs started at once share the files."""
    if path.exists():
        return
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_bytes(content)
    os.replace(partial, path)
