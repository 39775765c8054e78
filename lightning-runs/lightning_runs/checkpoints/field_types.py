"""The types Lightning and this library read from a checkpoint: a hand-edited file with another type (an epoch as
text, callbacks as a list, an optimizer state without its groups, RNG state of the wrong form) is refused where the
file is read, in one line naming the field, instead of a traceback from deep inside Lightning's restore once the run
folder exists."""

from typing import Any

import torch

# Top-level fields (absent is fine: Lightning writes some only for fit) and the type each must have.
FIELDS = {
    "epoch": int,
    "global_step": int,
    "state_dict": dict,
    "hyper_parameters": dict,
    "datamodule_hyper_parameters": dict,
    "callbacks": dict,
    "loops": dict,
    "optimizer_states": list,
    "lr_schedulers": list,
}
# RandomState's saved form (checkpoints/): torch's state a tensor, the others lists.
RANDOM_STATE = {"torch": torch.Tensor, "cuda": list, "numpy": list, "python": list}


def wrong_type(checkpoint: dict[str, Any]) -> str | None:
    """What in `checkpoint` has a type Lightning cannot restore from, or None."""
    for key, kind in FIELDS.items():
        if key in checkpoint and not _is(checkpoint[key], kind):
            return _said(key, checkpoint[key], kind)
    weights = checkpoint.get("state_dict", {})
    if name := next((name for name, value in weights.items() if not isinstance(value, torch.Tensor)), None):
        return _said(f"state_dict[{name!r}]", weights[name], torch.Tensor)
    for key, state in checkpoint.get("callbacks", {}).items():
        if not isinstance(state, dict):
            return _said(f"callbacks[{key!r}]", state, dict)
        if str(key).startswith("RandomState"):
            for part, kind in RANDOM_STATE.items():
                if not isinstance(state.get(part), kind):
                    return _said(f"callbacks[{key!r}][{part!r}]", state.get(part), kind)
            loaders = state.get("loaders", [])  # the training loaders' generators (absent before they were kept)
            if not (isinstance(loaders, list) and all(isinstance(one, torch.Tensor) for one in loaders)):
                return _said(f"callbacks[{key!r}]['loaders']", loaders, list)
    for index, state in enumerate(checkpoint.get("optimizer_states", [])):
        if not (isinstance(state, dict) and isinstance(state.get("state"), dict)):
            return f"its optimizer_states[{index}] is not an optimizer's state (a dict with its state)"
        if not isinstance(state.get("param_groups"), list):
            return _said(f"optimizer_states[{index}]['param_groups']", state.get("param_groups"), list)
    for index, state in enumerate(checkpoint.get("lr_schedulers", [])):
        if not isinstance(state, dict):
            return _said(f"lr_schedulers[{index}]", state, dict)
    return None


def _is(value, kind: type) -> bool:
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def _said(field: str, value, kind: type) -> str:
    return f"its {field} is {type(value).__name__}, not {kind.__name__}"
