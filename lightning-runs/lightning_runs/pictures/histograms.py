"""Histograms: `weights/<parameter>` (and with `gradients`, `gradients/<parameter>` of the epoch's last step, before
clipping) after a fit's first and last epochs and every N between; never per step (~1 ms and 1-2 KB each).

    Trainer(callbacks=[Histograms(every_n_epochs=10, gradients=True)])
"""

import torch
from jsonargparse.typing import NonNegativeInt
from lightning.pytorch.callbacks import Callback

from lightning_runs.distributed import this_ranks_part
from lightning_runs.pictures.writers import write_histograms


class Histograms(Callback):
    def __init__(self, every_n_epochs: NonNegativeInt = 10, gradients: bool = False) -> None:
        self.every_n_epochs, self.gradients = every_n_epochs, gradients
        self._first_epoch = self._written_step = None
        self._gradients: dict[str, torch.Tensor] = {}

    def on_train_start(self, trainer, pl_module) -> None:
        self._first_epoch, self._written_step = trainer.current_epoch, trainer.global_step  # a resume has its own first

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        # Kept here, the epoch's last step's: Lightning frees the gradients before validation.
        if self.gradients and self.every_n_epochs and trainer.is_last_batch:
            self._gradients = {
                n: p.grad.detach().clone() for n, p in pl_module.named_parameters() if p.grad is not None
            }

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        epoch, every = trainer.current_epoch, self.every_n_epochs
        if every and (epoch == self._first_epoch or epoch + 1 == trainer.max_epochs or (epoch + 1) % every == 0):
            self._write(trainer, pl_module)

    def on_train_end(self, trainer, pl_module) -> None:
        if self.every_n_epochs and trainer.global_step != self._written_step:  # an early stop's last epoch
            self._write(trainer, pl_module)

    def _write(self, trainer, pl_module) -> None:
        tensors = {f"weights/{n}": p.detach() for n, p in pl_module.named_parameters()}
        tensors |= {f"gradients/{n}": g for n, g in self._gradients.items()}
        # Sharded (FSDP): this rank's shard, the only part rank zero may read without the others.
        histograms = {tag: this_ranks_part(t).float() for tag, t in tensors.items()}
        write_histograms(trainer, histograms, trainer.global_step)
        self._written_step, self._gradients = trainer.global_step, {}
