"""Figures: the pictures a LightningModule declares, written to every logger that shows pictures.

    class MyModule(L.LightningModule):
        def figures(self, stage: str) -> dict[str, Figure | torch.Tensor]:
            return {"confusion_matrix": self.confusion[stage].plot()[0]}     # torchmetrics' own plot

    Trainer(callbacks=[Figures(every_n_epochs=10)])

At the end of each due epoch of a stage ("train", "val", "test"), `figures(stage)` is called on every rank (a metric's
compute may sync them) and what it returns is logged as `<stage>/<name>` by rank zero: a matplotlib Figure, or an image
tensor (H, W) or (C, H, W) in [0, 1] (`torchvision.utils.make_grid` of samples). Nothing else about the task is assumed:
a module without `figures` gets none, said in one line.
"""

from jsonargparse.typing import NonNegativeInt
from lightning.pytorch.callbacks import Callback

from lightning_runs.console import note
from lightning_runs.pictures.writers import write_pictures


class Figures(Callback):
    """`every_n_epochs`: a fit's figures every N epochs and at its last (validate, test: always); 0 turns them off."""

    # Every 25 epochs: the template's 50-epoch fit draws twice, halfway and at the end, at about 0.15 s a time (two
    # matplotlib figures rendered and PNG-encoded): under 3% of its fit phase.
    def __init__(self, every_n_epochs: NonNegativeInt = 25) -> None:
        self.every_n_epochs = every_n_epochs
        self._said = False

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._draw("train", trainer, pl_module)

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self._draw("val", trainer, pl_module)

    def on_test_epoch_end(self, trainer, pl_module) -> None:
        self._draw("test", trainer, pl_module)

    def _draw(self, stage: str, trainer, pl_module) -> None:
        if not self._due(trainer):
            return
        if not callable(getattr(pl_module, "figures", None)):
            if not self._said:
                self._said = True
                note(
                    f"figures: {type(pl_module).__name__} declares none; give it figures(stage) returning"
                    " {name: Figure or image} (python -m pydoc lightning_runs.pictures.figures)"
                )
            return
        drawn = pl_module.figures(stage) or {}
        write_pictures(trainer, {f"{stage}/{name}": picture for name, picture in drawn.items()}, trainer.global_step)

    def _due(self, trainer) -> bool:
        if self.every_n_epochs == 0:
            return False
        if trainer.state.fn != "fit":
            return True
        epoch = trainer.current_epoch
        return (epoch + 1) % self.every_n_epochs == 0 or epoch + 1 == trainer.max_epochs or trainer.should_stop
