"""A DataModule that shuffles with a generator of its own, seeded once in train_dataloader() (PyTorch's
reproducibility recipe), resumes at an epoch's end to the uninterrupted run's weights: checkpoints keep the training
loaders' generators (RandomState). Rebuilt from its seed, the resumed run would reshuffle epoch 1's order."""

from pathlib import Path

import pytest
import torch
from tiny_runs import run
from torch.utils.data import DataLoader, TensorDataset

from lightning_runs.checkpoints.random_state import loader_generators
from lightning_runs.testing import CrashAt
from tiny_tasks import TinyDataModule

LAST = Path("runs/tiny/version_0/checkpoints/last.ckpt")  # a run is named for its data
BATCHES = 3  # a training epoch, in steps


class OwnGenerator(TinyDataModule):
    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(self.hparams.seed)
        train = TensorDataset(*self.splits["train"])
        return DataLoader(train, batch_size=self.hparams.batch_size, shuffle=True, generator=generator)


def fit(home: Path, *args: str, callbacks=()) -> dict:
    home.mkdir(exist_ok=True)
    steps = ["--trainer.max_epochs=4", f"--trainer.limit_train_batches={BATCHES}", f"--data={__name__}.OwnGenerator"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(home)
        try:
            run("fit", *steps, *args, callbacks=callbacks)
        except RuntimeError as crash:
            assert "crash" in str(crash)
        return torch.load(LAST, weights_only=True)


def test_the_generators_of_a_loader_are_found_once_each_wherever_they_are():
    data = TensorDataset(torch.arange(8.0))
    own = torch.Generator()
    shuffled = DataLoader(data, shuffle=True, generator=own)  # the loader's and its sampler's: one generator
    assert loader_generators(shuffled) == [own]
    other = torch.Generator()
    assert loader_generators({"a": [shuffled], "b": DataLoader(data, shuffle=True, generator=other)}) == [own, other]
    assert loader_generators(DataLoader(data, shuffle=True)) == [] and loader_generators(None) == []


@pytest.mark.slow
def test_a_fit_stopped_at_an_epochs_end_resumes_to_the_weights_of_the_uninterrupted_run(tmp_path):
    whole = fit(tmp_path / "whole")
    stopped = fit(tmp_path / "resumed", callbacks=[CrashAt(step=2 * BATCHES)])  # as its third epoch begins
    assert stopped["global_step"] == 2 * BATCHES and len(stopped["callbacks"]["RandomState"]["loaders"]) == 1
    resumed = fit(tmp_path / "resumed", "--ckpt_path", "last")
    assert resumed["global_step"] == whole["global_step"] == 4 * BATCHES
    for key, weights in whole["state_dict"].items():
        assert torch.equal(weights, resumed["state_dict"][key]), key
