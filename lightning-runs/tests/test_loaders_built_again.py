"""What a resumed process rebuilds draws as the uninterrupted one did: a dataset whose samples are drawn from the
global RNG as `train_dataloader()` builds it (Lightning's BoringModel) is built from the RNG of the first build, a
fixed-order loader that cannot resume its position skips the batches the epoch had taken, and a loader's workers
continue their random draws (WorkerRandomState). Plain Trainers; each comparison fails without its mechanism."""

import lightning as L
import pytest
import torch
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from torch.utils.data import DataLoader, Dataset
from torchdata.stateful_dataloader import StatefulDataLoader

from lightning_runs.checkpoints import LastCheckpoint, RandomState, WorkerRandomState
from lightning_runs.testing import CrashAt

BATCHES = 4  # an epoch


class DrawnAtBuild(BoringModel):
    """BoringModel's loaders as its own: samples drawn when the loader is built, one per batch, in a fixed order."""

    def train_dataloader(self):
        return DataLoader(RandomDataset(32, 16), batch_size=2)


class ScheduledByItsLength(DrawnAtBuild):
    """Its schedule reads `estimated_stepping_batches`, which builds the training loader before `on_fit_start`."""

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        steps = self.trainer.estimated_stepping_batches
        return [optimizer], [torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)]


def fit(root, *callbacks, ckpt_path=None, module=DrawnAtBuild) -> dict:
    L.seed_everything(0)
    last = LastCheckpoint(root, filename="last", every_n_train_steps=1)  # an epoch's last step saved at its end
    trainer = L.Trainer(
        default_root_dir=root, max_epochs=2, limit_train_batches=BATCHES, limit_val_batches=0, logger=False,
        callbacks=[RandomState(), last, *callbacks], enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    try:
        trainer.fit(module(), ckpt_path=ckpt_path)
    except RuntimeError as crash:
        assert "crash" in str(crash)
    return torch.load(root / "last.ckpt", weights_only=True)["state_dict"]


@pytest.mark.parametrize("module", [DrawnAtBuild, ScheduledByItsLength])
@pytest.mark.parametrize("step", [BATCHES, BATCHES + 2], ids=["at an epoch's end", "inside an epoch"])
def test_a_module_whose_data_is_drawn_as_its_loader_is_built_resumes_to_the_uninterrupted_weights(
    tmp_path, step, module
):
    whole = fit(tmp_path / "whole", module=module)
    fit(tmp_path / "stopped", CrashAt(step=step), module=module)
    resumed = fit(tmp_path / "stopped", ckpt_path="last", module=module)
    assert resumed.keys() == whole.keys() and all(torch.equal(whole[k], resumed[k]) for k in whole)


class Flips(Dataset):
    """A random draw per sample, made in whichever process reads it (an augmentation)."""

    def __len__(self) -> int:
        return 24

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.rand(1) + index


def rest_after_resume(dataset: Dataset, taken: int = 3) -> tuple[list, list]:
    """The batches after the first `taken`: read on, and read by a new loader resumed from the state at `taken`."""
    torch.manual_seed(0)
    loader = StatefulDataLoader(dataset, batch_size=2, num_workers=2, shuffle=True)
    batches = iter(loader)
    for _ in range(taken):
        next(batches)
    state = loader.state_dict()
    read_on = list(batches)
    resumed = StatefulDataLoader(dataset, batch_size=2, num_workers=2, shuffle=True)
    resumed.load_state_dict(state)
    return read_on, list(resumed)


def test_a_loaders_workers_continue_their_random_draws_after_a_resume_with_worker_random_state():
    read_on, resumed = rest_after_resume(WorkerRandomState(Flips()))
    assert len(resumed) == len(read_on) == 12 - 3
    assert all(torch.equal(a, b) for a, b in zip(read_on, resumed, strict=True))
    read_on, resumed = rest_after_resume(Flips())  # without: each worker starts again from its seed
    assert torch.equal(torch.cat(read_on).long(), torch.cat(resumed).long())  # the same samples,
    assert not all(torch.equal(a, b) for a, b in zip(read_on, resumed, strict=True))  # other draws
