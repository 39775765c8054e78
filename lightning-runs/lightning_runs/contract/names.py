"""The contract's names, which nothing needs torch to read (the `runs` table starts without it): metrics are named
`stage/name` (`val/f1`), and the model parameters its data fills in (links.py)."""

# model parameter <- DataModule attribute (parts.py)
DATA_LINKS = {"num_classes": "num_classes", "input_shape": "sample_shape"}
# The model's settings that follow from its data: no recipe's own (recipes.py), no option to change (bounded.py).
DERIVED = tuple(f"model.{parameter}" for parameter in DATA_LINKS)


def counterpart(metric: str | None, stage: str) -> str | None:
    """`val/f1` -> `test/f1`: the same metric of another stage, by the `stage/name` naming of metrics."""
    if not metric or "/" not in metric:
        return None
    return f"{stage}/{metric.split('/', 1)[1]}"
