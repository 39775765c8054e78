"""Tiny tasks for the export tests (test_export_any_module.py): plain LightningModules written as Lightning's docs
write them, each declaring its `example_input_array` and each with an export question of its own, and `fitted`, which
trains one for an epoch under LightningCLI with the model and the data chosen by class path (`subclass_mode_model`),
as a project's `fit` saves it; `exports` runs the export command in this process, and `refused` takes its one-line
refusal (test_export_safety.py too)."""

from pathlib import Path

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.cli import LightningCLI
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

QUIET = {
    "accelerator": "cpu",
    "devices": 1,
    "max_epochs": 1,
    "logger": False,
    "enable_checkpointing": False,
    "enable_progress_bar": False,
    "enable_model_summary": False,
}


class Samples(L.LightningDataModule):
    """`n` random samples of `shape` and the sum of each as its target; a train loader only."""

    def __init__(self, shape: tuple[int, ...] = (3,), n: int = 64, batch_size: int = 16) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str) -> None:
        samples = torch.randn(self.hparams.n, *self.hparams.shape, generator=torch.Generator().manual_seed(0))
        self.samples, self.targets = samples, samples.flatten(1).sum(dim=1)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(TensorDataset(self.samples, self.targets), batch_size=self.hparams.batch_size, shuffle=True)


class MLP(nn.Module):
    def __init__(self, features: int = 3, hidden: int = 8) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x).squeeze(-1)  # (N, features) -> (N,)


class Fitted(L.LightningModule):
    """Fitted to the samples' sums: the training the modules below share; `inputs` is what forward takes of a batch."""

    def inputs(self, x: torch.Tensor):
        return (x,)

    def training_step(self, batch, batch_idx):
        x, y = batch
        out = self(*self.inputs(x))
        out = out["value"] if isinstance(out, dict) else out[0] if isinstance(out, tuple) else out
        return F.mse_loss(out, y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


class Regressor(Fitted):
    """The network is an argument, chosen by class path."""

    def __init__(self, network: nn.Module | None = None) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.network = network or MLP()
        self.example_input_array = torch.zeros(2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


class InjectedRegressor(Regressor):
    """Lightning's docs' way with an injected module: left out of the saved hyperparameters."""

    def __init__(self, network: nn.Module | None = None) -> None:
        super().__init__(network)
        self.save_hyperparameters(ignore=["network"])


class NoExample(Regressor):
    """Declares no example_input_array: export has nothing to trace it with."""

    def __init__(self) -> None:
        super().__init__()
        self.example_input_array = None


class TwoInputs(Fitted):
    """forward(x, y), its example a tuple: two positional inputs, (N, 3) and (N, 2)."""

    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.x, self.y = nn.Linear(3, 4), nn.Linear(2, 4)
        self.example_input_array = (torch.zeros(2, 3), torch.zeros(2, 2))

    def inputs(self, x: torch.Tensor):
        return x, x[:, :2]

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (self.x(x) * self.y(y)).sum(dim=1)  # (N,)


class KeywordInputs(Fitted):
    """forward(x, scale), its example a dict: keyword inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = nn.Linear(3, 1)
        self.example_input_array = {"x": torch.zeros(2, 3), "scale": torch.ones(2, 1)}

    def inputs(self, x: torch.Tensor):
        return x, torch.ones(len(x), 1)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return (self.layer(x) * scale).squeeze(-1)


class VAE(Fitted):
    """A variational autoencoder whose forward samples its latent, in eval mode too."""

    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.encoder, self.decoder = nn.Linear(3, 4), nn.Linear(2, 1)
        self.example_input_array = torch.zeros(2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean, log_var = self.encoder(x).chunk(2, dim=1)
        z = mean + torch.randn_like(mean) * (0.5 * log_var).exp()  # (N, 2)
        return self.decoder(z).squeeze(-1)


class SignalCNN(Fitted):
    """A 1-D CNN over (N, 40) signals; `size_from` is how its forward reads the batch size for its reshapes."""

    def __init__(self, size_from: str = "len") -> None:
        super().__init__()
        self.save_hyperparameters()
        self.conv = nn.Conv1d(1, 4, kernel_size=5, padding=2)
        self.head = nn.Linear(4 * 40, 1)
        self.example_input_array = torch.zeros(2, 40)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = len(x) if self.hparams.size_from == "len" else x.shape[0]
        features = self.conv(x.view(n, 1, 40)).relu()  # (N, 4, 40)
        return self.head(features.view(n, -1)).squeeze(-1)  # (N,)


class TwoHeads(Fitted):
    """Two outputs, as a dict (`as_dict`) or a tuple: a value and the logits of its sign."""

    def __init__(self, as_dict: bool = True) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.body = nn.Linear(3, 8)
        self.value, self.sign = nn.Linear(8, 1), nn.Linear(8, 2)
        self.example_input_array = torch.zeros(2, 3)

    def forward(self, x: torch.Tensor):
        hidden = self.body(x).relu()
        value, logits = self.value(hidden).squeeze(-1), self.sign(hidden)  # (N,), (N, 2)
        return {"value": value, "logits": logits} if self.hparams.as_dict else (value, logits)


class SizeAsNumber(Fitted):
    """Reads its batch size as a plain number through a tensor: torch.export keeps it free, a TorchScript trace
    writes down the example's."""

    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters()  # none to save: LightningCLI records the class with them
        self.layer = nn.Linear(3, 1)
        self.example_input_array = torch.zeros(2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = torch.tensor(x.shape)[0].item()
        return self.layer(x.reshape(n, -1)).squeeze(-1)


def fitted(folder: Path, model: str, *args: str, data: tuple[str, ...] = ()) -> Path:
    """One epoch under LightningCLI with the model and the data chosen by class path, as `fit` saves it."""
    cli = LightningCLI(
        L.LightningModule,
        L.LightningDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        save_config_callback=None,
        trainer_defaults=QUIET,
        run=False,
        args=["--model", f"{__name__}.{model}", *args, "--data", f"{__name__}.Samples", *data],
    )
    cli.trainer.fit(cli.model, cli.datamodule)
    path = folder / f"{model}.ckpt"
    cli.trainer.save_checkpoint(path)
    return path


def exports(*args: str) -> Path:
    """`python -m <package> export <args>`, through the entry point's handler (errors.main), in this process."""
    from lightning_runs.errors import main
    from lightning_runs.tools import export

    return main(lambda: export.main(None, list(args)))


def refused(capsys, *args: str, code: int = 2) -> str:
    """The one line an export refused with; no file changed, none written."""
    from tiny_runs import refusal, snapshot

    before = snapshot()
    error = refusal(capsys, lambda: exports(*args), code)
    assert snapshot() == before, "nothing written"
    return error
