"""InitFrom: a new run starting from another run's weights (fine-tuning, a "hot start"): the weights whose names and
shapes match are loaded, the rest stay as initialized (a new head for another class count), said in one line; the
optimizer, schedule, step count and run folder are the new run's own. Named parts can be frozen.

    Trainer(callbacks=[InitFrom("runs/base/version_0", freeze=["backbone"])])
"""

from pathlib import Path

from lightning.pytorch.callbacks import BaseFinetuning, Callback
from torch import Tensor

from lightning_runs.checkpoints.checkpoint_io import read_checkpoint
from lightning_runs.console import say
from lightning_runs.errors import UsageError
from lightning_runs.run_folders import checkpoint_in


class InitFrom(Callback):
    def __init__(self, path: str | None, freeze: list[str] | None = None) -> None:
        # A checkpoint, or a run folder's best.ckpt (else its last.ckpt); None: only freezes.
        found = path and (checkpoint_in(path, "best.ckpt") or checkpoint_in(path, "last.ckpt") or Path(path))
        self.path, self.freeze = found, list(freeze or [])
        self.loaded: list[str] = []
        self.left: list[str] = []

    def setup(self, trainer, pl_module, stage: str) -> None:
        if stage == "fit":  # before configure_optimizers: an owner's may leave out what does not train
            self.frozen = self._freeze(pl_module)

    def load_state_dict(self, state_dict: dict) -> None:
        self.resumed = True  # the new run's own checkpoint restores its weights: it continues, not its origin

    def on_fit_start(self, trainer, pl_module) -> None:
        # After a resume's restore (Lightning restores after setup(), before this), into the parameters in place: the
        # optimizers and a DDP wrapper hold them already and every rank reads the same file.
        if getattr(self, "resumed", False) or self.path is None:
            return
        saved = read_checkpoint(self.path)["state_dict"]
        own = pl_module.state_dict()
        wrong = [k for k, v in own.items() if isinstance(v, Tensor) and not isinstance(saved.get(k, v), Tensor)]
        if wrong:  # its shape was read: an AttributeError traceback
            raise UsageError(
                f'InitFrom(path="{self.path}"): its weight {wrong[0]} is a {type(saved[wrong[0]]).__name__}, not a'
                " tensor (a damaged checkpoint?); start from a checkpoint a fit saved"
            )
        fits = {k: v for k, v in saved.items() if k in own and tuple(v.shape) == tuple(own[k].shape)}
        if not fits:
            raise UsageError(
                f'InitFrom(path="{self.path}"): none of its weights fits {type(pl_module).__name__} (no name and'
                " shape in common); start from a checkpoint of a module with the same parts"
            )
        pl_module.load_state_dict(fits, strict=False)
        self.loaded = list(fits)
        self.left = [f"{k} {tuple(own[k].shape)}" + (f" (there {tuple(saved[k].shape)})" if k in saved else "")
                     for k in own if k not in fits]  # fmt: skip
        line = f"init from {self.path}: {len(fits)} of {len(own)} weights loaded"
        line += f"; left as initialized: {', '.join(self.left)}" if self.left else ""
        line += f"; frozen: {', '.join(self.freeze)} ({self.frozen} parameters)" if self.freeze else ""
        say(line)
        for logger in trainer.loggers:
            logger.log_hyperparams({"init_from": str(self.path), "freeze": ",".join(self.freeze)})

    def _freeze(self, pl_module) -> int:
        modules = dict(pl_module.named_modules())
        unknown = [name for name in self.freeze if name not in modules]
        if unknown:
            raise UsageError(f"InitFrom(freeze=...): {unknown[0]!r} is no submodule of {type(pl_module).__name__}")
        # Lightning's own freeze: parameters untrained, and batch norms' running statistics kept as loaded.
        BaseFinetuning.freeze([modules[name] for name in self.freeze], train_bn=False)
        if self.freeze and not any(p.requires_grad for p in pl_module.parameters()):  # backward would fail on them all
            raise UsageError(f"InitFrom(freeze=...): every parameter frozen ({', '.join(self.freeze)}), nothing trains")
        return sum(p.numel() for name in self.freeze for p in modules[name].parameters())

    def state_dict(self) -> dict:
        return {"path": str(self.path), "loaded": len(self.loaded), "left": self.left, "freeze": self.freeze}
