"""A resumed fit's optimizer state fits the optimizers its model configures, checked before Lightning loads it.

torch's `Optimizer.load_state_dict` checks the number of groups and of parameters in each, not the shapes of the
state: a hand-edited or foreign checkpoint whose Adam moments had another shape loaded, then the fused step wrote
past them (a segfault, exit 139, or silently wrong numbers). Lightning zips the saved states with the optimizers, so
a checkpoint holding none resumed with a fresh optimizer, and one without the key failed with a KeyError traceback.
The optimizers exist only once the fit has set up (`on_fit_start`, just before Lightning restores the training
state); a refusal then removes the run folder again, as every refusal does.
"""

import itertools
from pathlib import Path

import torch
from lightning.pytorch.callbacks import Callback

from lightning_runs.checkpoints.loading import load_plain
from lightning_runs.errors import UsageError

# torch's optimizers whose every state tensor is a scalar (`step`) or has its parameter's shape; others (LBFGS,
# Adafactor's factored moments, those of other libraries) keep state of other shapes, and only their counts are checked.
PER_ELEMENT = tuple(
    getattr(torch.optim, name)
    for name in ("SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "Adagrad", "Adadelta", "ASGD")
)
ADVICE = "resume from the checkpoint as its run saved it, or drop --ckpt_path to train anew"


class OptimizerStates(Callback):
    def on_fit_start(self, trainer, pl_module) -> None:
        if trainer.ckpt_path is not None:
            check_optimizer_states(Path(trainer.ckpt_path), trainer.optimizers, pl_module)


def check_optimizer_states(path: Path, optimizers: list[torch.optim.Optimizer], module: torch.nn.Module) -> None:
    saved = load_plain(path).get("optimizer_states")  # read and checked at parse time: cached
    if saved is None:
        raise UsageError(
            f"--ckpt_path {path}: it holds no optimizer state (the weights alone, as save_weights_only writes), so a"
            " fit cannot continue it; test or predict with it, or drop --ckpt_path to train anew"
        )
    if len(saved) != len(optimizers):
        raise UsageError(
            f"--ckpt_path {path}: it holds {len(saved)} optimizer states, the model configures {len(optimizers)}"
            f" optimizers; {ADVICE}"
        )
    names = {parameter: name for name, parameter in module.named_parameters()}
    for index, (state, optimizer) in enumerate(zip(saved, optimizers, strict=True)):
        if problem := _misfit(state, optimizer, names):
            raise UsageError(
                f"--ckpt_path {path}: its optimizer state {index} does not fit this model ({problem}); {ADVICE}"
            )


def _misfit(state: dict, optimizer: torch.optim.Optimizer, names: dict) -> str | None:
    groups = state["param_groups"]  # its types were checked where the file was read (field_types.py)
    if len(groups) != len(optimizer.param_groups):
        return f"{len(groups)} parameter groups there, {len(optimizer.param_groups)} here"
    for number, (group, built) in enumerate(zip(groups, optimizer.param_groups, strict=True)):
        if len(group.get("params", [])) != len(built["params"]):
            return f"group {number} has {len(group.get('params', []))} parameters there, {len(built['params'])} here"
    if not isinstance(optimizer, PER_ELEMENT):
        return None
    # As torch's load_state_dict pairs them: the saved ids, group by group, with the optimizer's parameters in order.
    parameters = dict(
        zip(
            itertools.chain.from_iterable(group["params"] for group in groups),
            itertools.chain.from_iterable(group["params"] for group in optimizer.param_groups),
            strict=True,
        )
    )
    for key, values in state["state"].items():
        parameter = parameters.get(key)
        if parameter is None or not isinstance(values, dict):
            continue  # torch ignores the state of an id that no group names
        for name, value in values.items():
            if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != parameter.shape:
                owner = names.get(parameter, f"parameter {key}")
                return f"{name} of {owner} is {tuple(value.shape)} there, {tuple(parameter.shape)} here"
    return None
