"""The contract's names, which nothing needs torch to read (the `runs` table starts without it): metrics are named
`stage/name` (`val/f1`) or `stage_name` (`val_f1`), and the model parameters its data fills in (links.py)."""

# model parameter <- DataModule attribute (parts.py)
DATA_LINKS = {"num_classes": "num_classes", "input_shape": "sample_shape"}
# The model's settings that follow from its data: no recipe's own (recipes.py), no option to change (bounded.py).
DERIVED = tuple(f"model.{parameter}" for parameter in DATA_LINKS)


# How a metric's stage is joined to its name: `val/f1` (the contract's, and the template's) or `val_f1` (Lightning's
# own docs log `val_loss`); each machinery that reads a stage reads both.
SEPARATORS = ("/", "_")


def split_metric(metric: str | None) -> tuple[str, str, str] | None:
    """`val/f1` -> ("val", "/", "f1"), `val_loss` -> ("val", "_", "loss"); None for a name with no stage."""
    for separator in SEPARATORS:
        stage, found, name = (metric or "").partition(separator)
        if found and stage and name:
            return stage, separator, name
    return None


def stage_of(metric: str | None) -> str | None:
    parts = split_metric(metric)
    return parts[0] if parts else None


def counterpart(metric: str | None, stage: str) -> str | None:
    """`val/f1` -> `test/f1`, `val_acc` -> `test_acc`: the same metric of another stage."""
    parts = split_metric(metric)
    return None if parts is None else f"{stage}{parts[1]}{parts[2]}"
