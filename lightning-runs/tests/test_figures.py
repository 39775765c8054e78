"""Figures (pictures/figures.py): the pictures a module declares with `figures(stage)` (matplotlib Figures or image
tensors), logged as `<stage>/<name>` at the end of each due epoch, in a plain Trainer and through the CLI. The library
draws nothing of its own and never calls a module's forward: a module without `figures` gets none and one line, and a
GAN whose forward maps latents to points fits, validates and tests with figures on."""

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.loggers import TensorBoardLogger
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tiny_runs import run, scalars
from torch import nn
from torchmetrics.classification import MulticlassConfusionMatrix

from lightning_runs.pictures import Figures
from tiny_tasks import TinyClassifier, TinyDataModule

HERE = "test_figures"
STEPS = 6  # a training epoch of TinyDataModule's defaults: 192 points in batches of 32
PLAIN = {"accelerator": "cpu", "devices": 1, "enable_checkpointing": False, "enable_progress_bar": False}
PLAIN |= {"enable_model_summary": False}


class Drawn(TinyClassifier):
    """Declares its pictures: the validation's confusion matrix (torchmetrics' own plot) and its weights as an image."""

    def __init__(self, num_classes: int = 3, input_shape: tuple[int, ...] = (4,), lr: float = 0.05) -> None:
        super().__init__(num_classes, input_shape, lr)
        self.confusion = MulticlassConfusionMatrix(num_classes)
        self.stages: list[str] = []

    def validation_step(self, batch, batch_idx: int) -> torch.Tensor:
        logits = super().validation_step(batch, batch_idx)
        self.confusion.update(logits, batch[1])
        return logits

    def figures(self, stage: str) -> dict:
        self.stages.append(stage)
        weights = self.layer.weight.detach()
        drawn = {"weights": (weights - weights.min()) / (weights.max() - weights.min())}  # (3, 4) in [0, 1]
        if stage == "val":
            drawn["confusion_matrix"] = self.confusion.plot()[0]
            self.confusion.reset()
        return drawn


def images(run_dir) -> dict[str, list[int]]:
    """Each image tag a run's TensorBoard files hold, with the steps it was logged at."""
    events = EventAccumulator(str(run_dir), size_guidance={"images": 0})
    events.Reload()
    return {tag: [event.step for event in events.Images(tag)] for tag in events.Tags()["images"]}


def test_a_plain_trainer_logs_what_the_module_declares_at_each_stage():
    model = Drawn()
    trainer = L.Trainer(
        max_epochs=2, logger=TensorBoardLogger("runs", name="plain"), callbacks=[Figures(every_n_epochs=1)], **PLAIN
    )
    trainer.fit(model, datamodule=TinyDataModule())
    trainer.test(model, datamodule=TinyDataModule())
    assert model.stages == ["val", "train", "val", "train", "test"], "the sanity check draws nothing"
    assert images("runs/plain/version_0") == {
        "val/weights": [STEPS, 2 * STEPS],
        "val/confusion_matrix": [STEPS, 2 * STEPS],
        "train/weights": [STEPS, 2 * STEPS],
        "test/weights": [2 * STEPS],
    }


def test_through_the_cli_figures_come_every_n_epochs_and_at_the_last():
    cli = run("fit", f"--model={HERE}.Drawn", "--trainer.max_epochs=3", "--figures.every_n_epochs=2")
    assert cli.model.stages == ["val", "train", "val", "train"], "epochs 2 and 3 (the last)"
    assert images("runs/tiny/version_0")["val/confusion_matrix"] == [2 * STEPS, 3 * STEPS]
    run("test", "--ckpt_path=last")
    test_step = [step for step, _ in scalars("runs/tiny/version_0", "test/acc")]
    assert images("runs/tiny/version_0")["test/weights"] == test_step, "where Lightning logs the test's scalars"


def test_every_n_epochs_0_draws_nothing():
    cli = run("fit", f"--model={HERE}.Drawn", "--trainer.max_epochs=1", "--figures.every_n_epochs=0")
    assert cli.model.stages == [] and images("runs/tiny/version_0") == {}


def test_a_module_without_figures_gets_none_and_one_line_saying_how(capsys):
    run("fit", "--trainer.max_epochs=2")  # TinyClassifier declares none
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("figures:")]
    assert said == [
        "figures: TinyClassifier declares none; give it figures(stage) returning {name: Figure or image}"
        " (python -m pydoc lightning_runs.pictures.figures)"
    ], "once, not once a stage or an epoch"
    assert images("runs/tiny/version_0") == {}


class GAN(L.LightningModule):
    """A GAN as Lightning's docs write one: manual optimization, a training_step that returns nothing, a forward that
    maps latents (N, 8) to points (N, 4), never the batch's points. Its figure is an image of its samples. `calls`:
    forward's calls, `own`: the ones its own steps made."""

    def __init__(self, latent: int = 8, lr: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.generator = nn.Sequential(nn.Linear(latent, 16), nn.ReLU(), nn.Linear(16, 4))
        self.discriminator = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
        self.calls = self.own = 0

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if z.shape[1:] != (self.hparams.latent,):
            raise ValueError(f"forward takes latents (N, {self.hparams.latent}), not {tuple(z.shape)}")
        return self.generator(z)

    def sample(self, n: int) -> torch.Tensor:
        self.own += 1
        return self(torch.randn(n, self.hparams.latent, device=self.device))

    def training_step(self, batch, batch_idx: int) -> None:
        real, _ = batch
        generator, discriminator = self.optimizers()
        fake = self.sample(len(real))
        ones, zeros = torch.ones(len(real), 1), torch.zeros(len(real), 1)
        d_loss = F.binary_cross_entropy_with_logits(self.discriminator(real), ones)
        d_loss = d_loss + F.binary_cross_entropy_with_logits(self.discriminator(fake.detach()), zeros)
        discriminator.zero_grad()
        self.manual_backward(d_loss)
        discriminator.step()
        g_loss = F.binary_cross_entropy_with_logits(self.discriminator(fake), ones)
        generator.zero_grad()
        self.manual_backward(g_loss)
        generator.step()
        self.log_dict({"train/d_loss": d_loss, "train/g_loss": g_loss})

    def validation_step(self, batch, batch_idx: int) -> None:
        real, _ = batch
        score = self.discriminator(self.sample(len(real))).sigmoid().mean()
        self.log("val/loss", 1 - score)  # the recipe's monitor: how unlike the real points the samples look

    def test_step(self, batch, batch_idx: int) -> None:
        self.validation_step(batch, batch_idx)

    def figures(self, stage: str) -> dict:
        # Its samples as an image tensor, 64 points of 4 values in a 16x16 square: a Figure's path is Drawn's, and
        # rendering one is ~0.15 s of each of this test's 8 drawings.
        return {"samples": self.sample(64).detach().reshape(16, 16).sigmoid()}

    def configure_optimizers(self):
        generator = torch.optim.Adam(self.generator.parameters(), lr=self.hparams.lr)
        return generator, torch.optim.Adam(self.discriminator.parameters(), lr=self.hparams.lr)


def test_a_gans_forward_is_never_called_by_the_library_through_fit_validate_and_test():
    """The figures once called forward on the batch's points and drew a confusion matrix of whatever came out: a
    generator's points against 8 labels crashed its fit in the last validation, after all training."""
    data = "--data=tiny_tasks.TinyDataModule"  # named: the default data goes with the default model only
    fitted = run("fit", f"--model={HERE}.GAN", data, "--trainer.max_epochs=2", "--figures.every_n_epochs=1")
    assert fitted.model.calls == fitted.model.own > 0
    per_epoch = 2 * STEPS  # a step of each of its two optimizers a batch
    assert images("runs/tiny/version_0") == {
        "val/samples": [per_epoch, 2 * per_epoch],
        "train/samples": [per_epoch, 2 * per_epoch],
    }
    # From its checkpoint alone: the run's config builds it, though the tiny CLI's links wrote num_classes and
    # input_shape, which it does not take, into the checkpoint's hyperparameters. Each evaluation adds its own stage's
    # figure to the run, and nothing else.
    for subcommand in ("validate", "test"):
        before = images("runs/tiny/version_0")
        evaluated = run(subcommand, "--ckpt_path=runs/tiny/version_0/checkpoints/last.ckpt")
        assert type(evaluated.model).__name__ == "GAN" and evaluated.model.calls == evaluated.model.own > 0
        after, tag = images("runs/tiny/version_0"), f"{subcommand.replace('validate', 'val')}/samples"
        assert after == before | {tag: [*before.get(tag, []), *after[tag][-1:]]}, subcommand  # one image more
