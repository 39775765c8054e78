"""The library's own tiny task, in the spirit of Lightning's `lightning.pytorch.demos.boring_classes`: what a project
hands RunsCLI, written against the contract (lightning_runs/contract/parts.py) and nothing of the template's example.

- `TinyDataModule`: an ordinary LightningDataModule over seeded random points whose class is the largest of a few
  fixed linear functions of them (learnable by one Linear layer), with plain DataLoaders;
- `TinyClassifier`: one Linear layer, torchmetrics accuracy per stage (`SlowTinyClassifier`: another default lr);
- `TinyCLI` / `cli_main`: the wiring a project's cli.py does, monitoring `val/loss` (min) so that nothing in the
  library can lean on a `val/acc`;
- `UnderscoreNames` (logs `val_loss`, `val_acc` as Lightning's docs name them) and `Unvalidated` (logs no validation
  metric): classifiers whose runs watch other metrics than the recipe's default.
Beside it: the regression (tiny_regression.py), typed arguments (tiny_typed.py),
networks chosen by class path (tiny_networks.py), points from a file (tiny_files.py), shards by rank (tiny_shards.py).
"""

import lightning_runs

# `python -m tiny_tasks ...` starts as a project's __main__.py does: the reader tool answers `runs` before torch is
# imported; any other command imports with the garbage collector waiting (lightning_runs.reader_tool), then main.
if __name__ == "__main__" and lightning_runs.reader_tool("tiny_tasks"):
    raise SystemExit

import math
from collections.abc import Sequence

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import Callback
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics.classification import MulticlassAccuracy

from lightning_runs.cli import RunsCLI, set_part_defaults
from lightning_runs.data import fold_indices


class TinySplits(L.LightningDataModule):
    """Plain DataLoaders over `self.splits` (split name -> (inputs, targets)), which a subclass's setup() fills with
    `three_splits`; batch_size by keyword: Lightning rebuilds the predict loader from its arguments."""

    splits: dict[str, tuple[torch.Tensor, torch.Tensor]] | None = None

    def train_dataloader(self) -> DataLoader:
        return DataLoader(TensorDataset(*self.splits["train"]), batch_size=self.hparams.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(TensorDataset(*self.splits["val"]), batch_size=self.hparams.batch_size)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(TensorDataset(*self.splits["test"]), batch_size=self.hparams.batch_size)


def three_splits(inputs: torch.Tensor, targets: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The last eighth of the points for test, the eighth before it for validation, the rest for training."""
    n_eval = len(inputs) // 8
    bounds = {"train": (0, len(inputs) - 2 * n_eval), "val": (-2 * n_eval, -n_eval), "test": (-n_eval, None)}
    return {name: (inputs[a:b], targets[a:b]) for name, (a, b) in bounds.items()}


class TinyDataModule(TinySplits):
    """`n` points of `features` values; a point's class is the index of the largest of `num_classes` linear
    functions of it, drawn once from `seed`."""

    sample_kind = "table"

    def __init__(
        self,
        n: int = 256,
        features: int = 4,
        num_classes: int = 3,
        batch_size: int = 32,
        seed: int = 0,
        folds: int | None = None,  # cross-validation: validate on fold `fold` of `folds` of train + val (the cv tool)
        fold: int = 0,
    ):
        super().__init__()
        self.save_hyperparameters()
        # Known before setup(): the model is built with them.
        self.num_classes, self.sample_shape = int(num_classes), (int(features),)  # plain: hparams compare types

    def setup(self, stage: str) -> None:
        if self.splits is not None:  # called twice (contract/parts.py): before the run writes, then by the Trainer
            return
        generator = torch.Generator().manual_seed(self.hparams.seed)
        points = torch.randn(self.hparams.n, self.hparams.features, generator=generator)
        weights = torch.randn(self.hparams.features, self.hparams.num_classes, generator=generator)
        self.splits = three_splits(points, (points @ weights).argmax(dim=1))
        # A subclass with arguments of its own (TinyImages, tiny_typed.TypedPoints) saves those: no folds there.
        if self.hparams.get("folds") is not None:
            (train, train_labels), (val, val_labels) = self.splits["train"], self.splits["val"]
            points, labels = torch.cat([train, val]), torch.cat([train_labels, val_labels])
            k = self.hparams.fold
            train, val = fold_indices(len(points), self.hparams.folds, k, self.hparams.seed, labels)
            self.splits |= {"train": (points[train], labels[train]), "val": (points[val], labels[val])}

    def predict_dataloader(self) -> DataLoader:
        # The test split's points without their labels, as a user's new samples would come.
        return DataLoader(TensorDataset(self.splits["test"][0]), batch_size=self.hparams.batch_size)


class TinyClassifier(L.LightningModule):
    def __init__(self, num_classes: int = 3, input_shape: tuple[int, ...] = (4,), lr: float = 0.05) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.hparams.input_shape = [int(size) for size in input_shape]  # plain YAML in hparams.yaml, not a tuple
        self.layer = nn.Linear(math.prod(input_shape), num_classes)
        self.example_input_array = torch.zeros(2, *input_shape)
        self.accuracy = nn.ModuleDict({stage: MulticlassAccuracy(num_classes) for stage in ("val", "test")})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x.flatten(1))  # (N, *input_shape) -> (N, num_classes) logits

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        samples, labels = batch
        loss = F.cross_entropy(self(samples), labels)
        self.log("train/loss", loss)
        return loss

    def _evaluate(self, batch, stage: str) -> torch.Tensor:
        samples, labels = batch
        logits = self(samples)
        self.accuracy[stage].update(logits, labels)
        self.log(f"{stage}/loss", F.cross_entropy(logits, labels), on_epoch=True)
        self.log(f"{stage}/acc", self.accuracy[stage], on_epoch=True)
        return logits.detach()

    def validation_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self._evaluate(batch, "val")

    def test_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self._evaluate(batch, "test")

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self(batch[0]).softmax(dim=-1)  # (N, num_classes) probabilities, for predictions.csv

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)  # a state to restore on resume


class WeightsOnItself(TinyClassifier):
    """Its weights a parameter of the LightningModule itself, in no submodule: nothing for --compile to compile."""

    def __init__(self, num_classes: int = 3, input_shape: tuple[int, ...] = (4,), lr: float = 0.05) -> None:
        super().__init__(num_classes, input_shape, lr)
        del self.layer
        self.weight = nn.Parameter(torch.zeros(num_classes, math.prod(input_shape)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1) @ self.weight.T


class SlowTinyClassifier(TinyClassifier):
    """TinyClassifier's arguments, with a learning rate of its own by default."""

    def __init__(self, num_classes: int = 3, input_shape: tuple[int, ...] = (4,), lr: float = 0.01) -> None:
        super().__init__(num_classes, input_shape, lr)


class TinyCLI(RunsCLI):
    def add_arguments_to_parser(self, parser) -> None:
        super().add_arguments_to_parser(parser)
        parser.link_arguments("data.num_classes", "model.init_args.num_classes", apply_on="instantiate")
        parser.link_arguments("data.sample_shape", "model.init_args.input_shape", apply_on="instantiate")
        set_part_defaults(parser, "early_stopping", monitor="val/loss", patience=100)
        set_part_defaults(parser, "best_checkpoint", monitor="val/loss", mode="min")


TRAINER_DEFAULTS = {"accelerator": "cpu", "devices": 1, "max_epochs": 3, "log_every_n_steps": 1}


def cli_main(args: list[str] | None = None, callbacks: Sequence[Callback] = ()) -> TinyCLI:
    return TinyCLI(
        TinyClassifier, TinyDataModule, trainer_defaults=TRAINER_DEFAULTS, name="tiny", callbacks=callbacks, args=args
    )


class UnderscoreNames(TinyClassifier):
    """Logs `val_loss`, `val_acc`, `test_loss`, `test_acc`, as Lightning's docs write them: the recipe's default
    monitor (`val/loss`) is not logged, so its runs say which they watch."""

    def _evaluate(self, batch, stage: str) -> torch.Tensor:
        samples, labels = batch
        logits = self(samples)
        self.accuracy[stage].update(logits, labels)
        self.log(f"{stage}_loss", F.cross_entropy(logits, labels))
        self.log(f"{stage}_acc", self.accuracy[stage])
        return logits.detach()


class Unvalidated(TinyClassifier):
    """Logs no validation metric (as Lightning's BoringModel). Its test logs `test/loss` and `test/acc`."""

    def validation_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self(batch[0]).detach()


class NoClassCount(TinyDataModule):
    """A DataModule missing a part of the contract: it does not say how many classes it has."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.num_classes = None


class BiasOptionClassifier(TinyClassifier):
    """TinyClassifier with a boolean among its hyperparameters, `bias` (whether its layer has one): a logger must keep
    it a boolean."""

    def __init__(
        self, num_classes: int = 3, input_shape: tuple[int, ...] = (4,), lr: float = 0.05, bias: bool = True
    ) -> None:
        super().__init__(num_classes, input_shape, lr)
        self.layer = nn.Linear(math.prod(input_shape), num_classes, bias=bias)


class TinyImages(TinyDataModule):
    """TinyDataModule's points as (1, 4, 4) images: samples the library draws (a batch of inputs, the misclassified)."""

    sample_kind = "image"

    def __init__(self, n: int = 256, num_classes: int = 3, batch_size: int = 32, seed: int = 0) -> None:
        super().__init__(n=n, features=16, num_classes=num_classes, batch_size=batch_size, seed=seed)
        self.hparams.features, self.sample_shape = 16, (1, 4, 4)  # saved are this class's arguments: not `features`

    def setup(self, stage: str) -> None:
        if self.splits is None:
            super().setup(stage)
            self.splits = {name: (points.view(-1, 1, 4, 4), labels) for name, (points, labels) in self.splits.items()}


class TinyBatches(TinyDataModule):
    """TinyDataModule's points in the library's stateful batches (lightning_runs.data): a fit stopped mid-epoch
    resumes at its next batch, in the order the uninterrupted fit saw (a plain DataLoader starts the epoch over). Under
    DDP each rank trains on its own shard."""

    _train_batches = _resume_state = None

    def train_dataloader(self):
        from lightning_runs.data import ShardSampler, TensorBatches

        train = self.splits["train"]
        rank, world = (self.trainer.global_rank, self.trainer.world_size) if self.trainer else (0, 1)
        sampler = ShardSampler(len(train[0]), shuffle=True, seed=self.hparams.seed, rank=rank, world_size=world)
        self._train_batches = TensorBatches(train, self.hparams.batch_size, sampler, drop_last=True)
        if self._resume_state is not None:
            self._train_batches.load_state_dict(self._resume_state)
            self._resume_state = None
        return self._train_batches

    # The position travels in the DataModule's checkpoint state, restored before the loader is built: Lightning
    # restores a loader's own state only where the loader is built after the checkpoint is read.
    def state_dict(self) -> dict:
        if self._train_batches is None:
            return {}
        state = self._train_batches.state_dict()
        # An epoch cut short by --trainer.limit_train_batches ends before the loader does: the next starts at batch 0.
        if self.trainer is not None and state["position"] >= self.trainer.num_training_batches:
            state = {**state, "position": 0}
        return {"train_batches": state}

    def load_state_dict(self, state: dict) -> None:
        self._resume_state = state.get("train_batches")


# Samples of any shape for the figures tests, and a model that makes a fit diverge on cue for the sweep tests.
def samples(shape: tuple[int, ...], count: int = 20) -> torch.Tensor:
    """`count` random samples of `shape` in [0.5, 1), with one value 0 inside each: every sample's whole extent has
    ink when drawn, and each one's minimum is 0."""
    x = torch.rand(count, *shape, generator=torch.Generator().manual_seed(0)) / 2 + 0.5
    x.view(count, -1)[:, x[0].numel() // 2] = 0
    return x


class NaNAfter(TinyClassifier):
    """Its training outputs turn to NaN from the given training step on, as a diverging model's do."""

    def __init__(self, num_classes: int = 3, input_shape: tuple[int, ...] = (4,), lr: float = 0.05, step: int = 2):
        super().__init__(num_classes, input_shape, lr)
        self.step, self.calls = step, 0

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        self.calls += 1
        loss = super().training_step(batch, batch_idx)
        return loss * float("nan") if self.calls > self.step else loss


if __name__ == "__main__":  # `python -m tiny_tasks fit|sweep|...`, as a project's __main__.py: a sweep's trials
    import tiny_tasks  # this file again under its own name: class paths and messages say tiny_tasks, not __main__

    lightning_runs.main(tiny_tasks.cli_main, "tiny_tasks")
