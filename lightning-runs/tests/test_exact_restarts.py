"""A resume is bit for bit on modules that draw random numbers and on callbacks that act at an epoch's start, whatever
the loader: a plain Trainer with the library's parts, stopped by SIGTERM inside an epoch or at its end, resumed from
last.ckpt, ends with every tensor of the uninterrupted run's checkpoint (RNG states and BN counters included)."""

from pathlib import Path

import lightning as L
import pytest
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.callbacks.finetuning import BaseFinetuning
from lightning.pytorch.loggers import TensorBoardLogger
from tiny_runs import assert_same_checkpoint, load
from torch import nn, optim
from torch.optim.lr_scheduler import MultiStepLR
from torch.optim.optimizer import Optimizer
from torch.utils.data import Dataset
from torchdata.stateful_dataloader import StatefulDataLoader

from lightning_runs.checkpoints import AtomicCheckpointIO, BestCheckpoint, LastCheckpoint, RandomState
from lightning_runs.errors import Stopped, cli_terms
from lightning_runs.faults import CheckpointOnSignal
from lightning_runs.testing import SignalAt
from tiny_tasks import TinyClassifier, TinyDataModule

BATCHES = 4  # a training epoch, in steps


class Points(Dataset):
    """Fixed points, optionally with noise drawn where the sample is read (a random augmentation)."""

    def __init__(self, shape: tuple[int, ...], noisy: bool = False) -> None:
        self.x = torch.randn(8 * BATCHES, *shape, generator=torch.Generator().manual_seed(0))
        self.noisy = noisy

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        return self.x[i] + (0.1 * torch.randn(self.x[i].shape) if self.noisy else 0), i % 2


class Stateful(L.LightningDataModule):
    """torchdata's StatefulDataLoader as its docs show it: no generator of its own."""

    def __init__(self, shape: tuple[int, ...] = (4,), workers: int = 0, noisy: bool = False) -> None:
        super().__init__()
        self.shape, self.workers, self.noisy = shape, workers, noisy

    def train_dataloader(self):
        return StatefulDataLoader(Points(self.shape, self.noisy), batch_size=8, shuffle=True, num_workers=self.workers)


class Dropout(L.LightningModule):
    """Dropout and a torch.randn in its step, as Lightning's GAN example draws its latents."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Dropout(0.5), nn.Linear(16, 2))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.net(x + torch.randn_like(x)), y)

    def configure_optimizers(self):
        return optim.SGD(self.parameters(), lr=0.1)


def fit(folder: Path, model, data, epochs: int, stop: Callback | None = None) -> dict:
    """A plain Lightning script with the library's parts in `folder` (`model` and `data` built after seeding);
    resumed from its last.ckpt where it has one."""
    folder.mkdir(exist_ok=True)
    last = folder / "checkpoints/last.ckpt"
    L.seed_everything(0, verbose=False)
    model, data = model(), data()
    parts = [LastCheckpoint(filename="last", enable_version_counter=False), RandomState()]
    trainer = L.Trainer(
        max_epochs=epochs, limit_train_batches=BATCHES, logger=False, accelerator="cpu", default_root_dir=".",
        callbacks=[*parts, CheckpointOnSignal(), *([stop] if stop else [])], plugins=[AtomicCheckpointIO()],
        enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:  # the checkpoints' folder as the same relative path in every run
        patch.chdir(folder)
        try:
            trainer.fit(model, data, ckpt_path="checkpoints/last.ckpt" if last.exists() else None)
        except Stopped:
            assert stop is not None
    return load(last)


def stopped_and_resumed(tmp_path, model, data, epochs: int, stop: Callback) -> tuple[dict, dict]:
    whole = fit(tmp_path / "whole", model, data, epochs)
    fit(tmp_path / "resumed", model, data, epochs, stop=stop)
    return whole, fit(tmp_path / "resumed", model, data, epochs)


@pytest.mark.parametrize("workers", [0, pytest.param(2, marks=pytest.mark.slow)])
def test_a_module_that_draws_resumes_exactly_from_a_stateful_loader_without_a_generator(tmp_path, workers):
    # The restored loader's iter() draws its base seed (and a shuffling sampler's) after the RNG was restored: every
    # later dropout mask and torch.randn differed (67 of 67 tensors of Lightning's demo transformer).
    data = lambda: Stateful(workers=workers, noisy=workers == 0)  # noqa: E731 - noise read in this process
    whole, resumed = stopped_and_resumed(tmp_path, Dropout, data, epochs=2, stop=SignalAt(step=BATCHES + 1))
    assert resumed["global_step"] == 2 * BATCHES
    assert_same_checkpoint(whole, resumed)
    assert torch.equal(whole["callbacks"]["RandomState"]["torch"], resumed["callbacks"]["RandomState"]["torch"])


class Scheduled(Dropout):
    """A per-step schedule sized by `trainer.estimated_stepping_batches`, as the default model's (and many a user's)
    is: reading it builds the training loader before Lightning reads the checkpoint."""

    def configure_optimizers(self):
        optimizer = optim.SGD(self.parameters(), lr=0.1)
        steps = int(self.trainer.estimated_stepping_batches)
        schedule = optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}


@pytest.mark.parametrize("workers", [0, pytest.param(2, marks=pytest.mark.slow)])
def test_a_stateful_loader_resumes_its_position_where_the_module_sized_its_schedule_from_the_loader(tmp_path, workers):
    # Lightning hands a loader its saved state only as it builds it after the checkpoint is read; sized schedules build
    # it before, and the resumed epoch started over (a user's StatefulDataLoader on the default model: 40 values apart).
    data = lambda: Stateful(workers=workers)  # noqa: E731
    whole, resumed = stopped_and_resumed(tmp_path, Scheduled, data, epochs=2, stop=SignalAt(step=BATCHES + 1))
    assert resumed["global_step"] == 2 * BATCHES
    assert_same_checkpoint(whole, resumed)


class DropoutClassifier(TinyClassifier):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.dropout(x, 0.3, self.training))


class StatefulPoints(TinyDataModule):
    """A user's DataModule: the tiny task's points in a StatefulDataLoader read by 2 workers."""

    def train_dataloader(self):
        train = torch.utils.data.TensorDataset(*self.splits["train"])
        return StatefulDataLoader(train, batch_size=self.hparams.batch_size, shuffle=True, num_workers=2)


@pytest.mark.slow
def test_the_cli_resumes_a_users_stateful_loader_with_workers_on_a_dropout_model_bit_for_bit(tmp_path):
    from tiny_runs import run

    recipe = ["--model=test_exact_restarts.DropoutClassifier", "--data=test_exact_restarts.StatefulPoints"]
    recipe += ["--trainer.max_epochs=2", "--name=points"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        run("fit", *recipe, "--name=whole")
        stop = ["--trainer.callbacks+=lightning_runs.testing.SignalAt", "--trainer.callbacks.step=8"]
        with pytest.raises(SystemExit) as stopped:
            run("fit", *recipe, *stop)
        assert stopped.value.code == 143
        run("fit", *recipe, *stop, "--ckpt_path=last")  # the same command: its step has passed
    last = "version_0/checkpoints/last.ckpt"
    whole, resumed = load(tmp_path / "runs/whole" / last), load(tmp_path / "runs/points" / last)
    assert resumed["global_step"] == 12
    for key in whole["state_dict"]:
        assert torch.equal(whole["state_dict"][key], resumed["state_dict"][key]), key
    assert torch.equal(whole["callbacks"]["RandomState"]["torch"], resumed["callbacks"]["RandomState"]["torch"])


def test_a_resume_inside_an_epoch_says_that_a_workers_random_draws_start_again(tmp_path, capsys):
    data = lambda: Stateful(workers=1, noisy=True)  # noqa: E731
    fit(tmp_path / "run", Dropout, data, 2, stop=SignalAt(step=BATCHES + 1))
    fit(tmp_path / "run", Dropout, data, 2)
    said = [line for line in capsys.readouterr().out.splitlines() if "worker" in line]
    assert len(said) == 1 and "num_workers=1" in said[0], said


def test_a_signal_saves_the_last_checkpoint_found_by_its_type_not_by_a_monitor(tmp_path):
    # What `--best_checkpoint.monitor null` builds: a BestCheckpoint watching nothing, listed before LastCheckpoint.
    # The signal saved best.ckpt and said "resume with last", whose file was an epoch older.
    keep = {"enable_version_counter": False}
    parts = [BestCheckpoint(monitor=None, filename="best", **keep), LastCheckpoint(filename="last", **keep)]
    trainer = L.Trainer(
        max_epochs=2, limit_train_batches=BATCHES, logger=False, default_root_dir=tmp_path, accelerator="cpu",
        callbacks=[*parts, RandomState(), CheckpointOnSignal(), SignalAt(step=BATCHES + 1)],
        enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    with pytest.raises(Stopped) as stop:
        trainer.fit(Dropout(), Stateful())
    last, step = tmp_path / "checkpoints/last.ckpt", BATCHES + 2
    resume = 'resume with trainer.fit(..., ckpt_path="last")'
    assert str(stop.value) == f"stopped by SIGTERM at step {step}; saved {last}; {resume}"
    assert stop.value.code == 143 and cli_terms(str(stop.value)).endswith("resume with --ckpt_path last")
    assert load(last)["global_step"] == step and load(tmp_path / "checkpoints/best.ckpt")["global_step"] == BATCHES


def test_ckpt_path_last_continues_the_newest_run_with_a_last_checkpoint_whichever_part_asks_first(tmp_path):
    # A plain script's default logger numbers its versions: Lightning looked in the new one. version_0 finished (best
    # and last), version_1 stopped before its first epoch ended (last only): BestCheckpoint, asked first, must not
    # choose version_0 by its best.ckpt.
    def fit(*callbacks, ckpt_path=None) -> L.Trainer:
        keep = {"enable_version_counter": False}
        parts = [BestCheckpoint(monitor=None, filename="best", **keep), LastCheckpoint(filename="last", **keep)]
        trainer = L.Trainer(
            max_epochs=1, limit_train_batches=BATCHES, logger=TensorBoardLogger(tmp_path, name="x"), accelerator="cpu",
            callbacks=[*parts, CheckpointOnSignal(), *callbacks], enable_progress_bar=False, enable_model_summary=False,
        )  # fmt: skip
        trainer.fit(Dropout(), Stateful(), ckpt_path=ckpt_path)
        return trainer

    fit()
    with pytest.raises(Stopped):
        fit(SignalAt(step=1))
    assert not (tmp_path / "x/version_1/checkpoints/best.ckpt").exists()
    resumed = fit(ckpt_path="last")
    assert resumed.ckpt_path == str(tmp_path / "x/version_1/checkpoints/last.ckpt")
    assert resumed.log_dir == str(tmp_path / "x/version_1") and resumed.global_step == BATCHES


# Lightning's fine-tuning example (examples/pytorch/domain_templates/computer_vision_fine_tuning.py), its callback
# byte for byte; the module is its TransferLearningModel's shape (feature_extractor, fc, optimizer over the trainable
# parameters, MultiStepLR) on a small randomly initialised backbone with BatchNorm.


class MilestonesFinetuning(BaseFinetuning):
    def __init__(self, milestones: tuple = (5, 10), train_bn: bool = False):
        super().__init__()
        self.milestones = milestones
        self.train_bn = train_bn

    def freeze_before_training(self, pl_module: L.LightningModule):
        self.freeze(modules=pl_module.feature_extractor, train_bn=self.train_bn)

    def finetune_function(self, pl_module: L.LightningModule, epoch: int, optimizer: Optimizer):
        if epoch == self.milestones[0]:
            # unfreeze 5 last layers
            self.unfreeze_and_add_param_group(
                modules=pl_module.feature_extractor[-5:], optimizer=optimizer, train_bn=self.train_bn
            )

        elif epoch == self.milestones[1]:
            # unfreeze remaining layers
            self.unfreeze_and_add_param_group(
                modules=pl_module.feature_extractor[:-5], optimizer=optimizer, train_bn=self.train_bn
            )


class TransferLearning(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        block = lambda a, b: [nn.Conv2d(a, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU()]  # noqa: E731
        self.feature_extractor = nn.Sequential(*block(3, 4), *block(4, 8), *block(8, 8), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self.fc(self.feature_extractor(x).flatten(1))
        return F.binary_cross_entropy_with_logits(logits, y.view(-1, 1).type_as(x))

    def configure_optimizers(self):
        trainable_parameters = list(filter(lambda p: p.requires_grad, self.parameters()))
        optimizer = optim.Adam(trainable_parameters, lr=1e-2)
        return [optimizer], [MultiStepLR(optimizer, milestones=(1, 2), gamma=0.1)]


STOPS = {  # milestones (1, 2) over 3 epochs
    "inside-the-milestones-epoch": SignalAt(step=BATCHES + 1),
    "inside-a-later-epoch": SignalAt(step=2 * BATCHES + 1),
    "at-the-end-of-the-milestones-epoch": SignalAt(batch=2 * BATCHES - 1),  # stops after its validation
}


def milestones_model() -> TransferLearning:
    model = TransferLearning()
    model.configure_callbacks = lambda: [MilestonesFinetuning(milestones=(1, 2))]
    return model


def small_images() -> Stateful:
    return Stateful(shape=(3, 6, 6))


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory) -> dict:
    """The uninterrupted fine-tuning run's last checkpoint, made once for the three stops (it is seeded)."""
    return fit(tmp_path_factory.mktemp("whole"), milestones_model, small_images, epochs=3)


@pytest.mark.parametrize("stop", list(STOPS.values()), ids=list(STOPS))
def test_lightnings_fine_tuning_example_resumes_with_its_unfrozen_layers_training(finetuned, tmp_path, stop):
    fit(tmp_path / "resumed", milestones_model, small_images, 3, stop=stop)
    whole, resumed = finetuned, fit(tmp_path / "resumed", milestones_model, small_images, 3)
    tracked = [int(whole["state_dict"][f"feature_extractor.{i}.num_batches_tracked"]) for i in (1, 4, 7)]
    assert tracked == [BATCHES, BATCHES, 2 * BATCHES], "BN tracks from its milestone on: 1 for the last five, then 2"
    assert_same_checkpoint(whole, resumed)


class SavedAtTheLastBatch(ModelCheckpoint):
    """Lightning's own step checkpoint (as tests/test_images.py's), at the first epoch's last batch, before that epoch
    ends; then a crash."""

    def __init__(self) -> None:
        super().__init__(filename="last", every_n_train_steps=BATCHES, enable_version_counter=False)

    def on_train_batch_end(self, trainer, *args) -> None:
        super().on_train_batch_end(trainer, *args)
        if trainer.global_step == BATCHES:
            raise RuntimeError("crash after the step checkpoint")


def plain_loader() -> L.LightningDataModule:
    return L.LightningDataModule.from_datasets(Points((4,), noisy=True), batch_size=8)  # a shuffled DataLoader


@pytest.mark.parametrize("data", [Stateful, plain_loader], ids=["stateful_loader", "plain_loader"])
def test_a_step_checkpoint_at_an_epochs_last_batch_resumes_with_the_next_epoch_bit_for_bit(tmp_path, data):
    # Lightning goes on with the next epoch as a restart inside it. RandomState replayed the ended epoch: the
    # StatefulDataLoader, handed its state, took no batch of the next; the plain loader had the batches taken skipped,
    # all of them (tests/test_images.py's step-7 case with RandomState: 16 tensors apart).
    whole = fit(tmp_path / "whole", Dropout, data, epochs=2)
    with pytest.raises(RuntimeError, match="after the step checkpoint"):
        fit(tmp_path / "resumed", Dropout, data, epochs=2, stop=SavedAtTheLastBatch())
    assert load(tmp_path / "resumed/checkpoints/last.ckpt")["global_step"] == BATCHES
    assert_same_checkpoint(whole, fit(tmp_path / "resumed", Dropout, data, epochs=2))
