"""One way to rebuild a checkpoint's module and data, for test, validate, predict and export alike: the run's own
config.yaml, then the checkpoint's hyperparameters, then what was typed, as the layers of one parse (RunsCLI._parse).

A checkpoint of a run (`runs/<name>/version_N/checkpoints/x.ckpt`) is parsed with its run's config.yaml first, less
where that run computed (configs.WHERE); any checkpoint's saved hyperparameters come next, as LightningCLI records them
(`_class_path` and the arguments its module was built with, a link's value among them), then the command line: typed
options of the run's own DataModule (`--data.path`) need no `--data <class>` again.
"""

import contextvars
import json
from pathlib import Path

import yaml
from lightning.pytorch.utilities.model_helpers import is_overridden

from lightning_runs.checkpoints.checkpoint_io import read_checkpoint
from lightning_runs.checkpoints.sharded import is_sharded
from lightning_runs.cli.class_paths import refuse_local_code
from lightning_runs.cli.placement import relative
from lightning_runs.configs import WHERE
from lightning_runs.console import say
from lightning_runs.errors import UsageError, first_line
from lightning_runs.private import saved_class_path
from lightning_runs.run_folders import read_run_data, run_of_checkpoint

EVALUATIONS = ("validate", "test", "predict")
GROUPS = ("model", "data")
# Set by export (tools/export.py): the command's module and data are built, nothing is run and no run folder claimed.
BUILDING = contextvars.ContextVar("building", default=False)


def typed(args: list[str], option: str) -> str | None:
    """The value typed for `option` (`--ckpt_path x` or `--ckpt_path=x`; the last one), else None."""
    pairs = zip(args, [*args[1:], None], strict=True)
    found = [then if arg == option else arg.partition("=")[2] for arg, then in pairs if arg.partition("=")[0] == option]
    return found[-1] if found else None


def without_classes(args: list[str]) -> list[str]:
    """`args` less the options of --model and --data (each with its value): what names the run and finds its
    checkpoint, parsed before the run's config says which classes those options belong to."""
    kept, skip = [], False
    for arg in args:
        option = arg.startswith("--") and arg[2:].partition("=")[0].partition(".")[0].partition("+")[0] in GROUPS
        if not option and not (skip and not arg.startswith("--")):
            kept.append(arg)
        skip = option and "=" not in arg
    return kept


def layers(path: Path) -> tuple[list[str], dict, list[str]]:
    """The configs an evaluation of the checkpoint at `path` is parsed with before what was typed (YAML text each), the
    classes they choose (None: no DataModule), and the names of the hyperparameters the checkpoint gave."""
    configs, classes, run = [], {}, run_of_checkpoint(path)
    if run is not None:
        recorded = read_run_data(run / "config.yaml")
        refuse_local_code(recorded, run / "config.yaml")  # before jsonargparse imports what it names
        for key in WHERE:
            (recorded.get("trainer") or {}).pop(key, None)
        configs.append(yaml.safe_dump(recorded))
        classes = {group: (recorded[group] or {}).get("class_path") for group in GROUPS if group in recorded}
    checkpoint = {} if is_sharded(path) else read_checkpoint(path)
    refuse_local_code([checkpoint.get("hyper_parameters"), checkpoint.get("datamodule_hyper_parameters")], path)
    hparams = {k: v for k, v in (checkpoint.get("hyper_parameters") or {}).items() if not k.startswith("_")}
    dotted = saved_class_path(checkpoint.get("hyper_parameters")) or classes.get("model")
    if dotted:  # dict_kwargs: jsonargparse moves those its class takes into init_args (RunsCLI drops the rest)
        model = {"class_path": dotted} | ({"dict_kwargs": hparams} if hparams else {})
        configs.append(json.dumps({"model": model}, default=str))
        classes["model"] = dotted
    return configs, classes, list(hparams)


def say_evaluated(subcommand: str, path: Path, folder: Path | None) -> None:
    """The one line every evaluation prints, also under --quiet: which checkpoint of which run it used."""
    checkpoint = {} if is_sharded(path) else read_checkpoint(path)
    at = ", ".join(f"{key} {checkpoint[key]}" for key in ("epoch", "global_step") if key in checkpoint)
    run = run_of_checkpoint(path)
    where = f"of the run {relative(run)}" if run is not None else "outside any run"
    writes = f"; its results go in {relative(folder)}" if folder is not None and run is None else ""
    say(f"{subcommand}: {path}{f' ({at})' if at else ''}, {where}{writes}".replace("global_step", "step"))


def check_step(model, stage: str) -> None:
    """A test needs the module's test_step; a predict without a predict_step gets Lightning's default, forward(batch),
    whose failure on a batch is said as what to define."""
    if is_overridden(f"{stage}_step", model):
        return
    name = type(model).__name__
    if stage == "test":
        raise UsageError(f"{name} has no test_step: there is nothing to test")
    default = model.predict_step

    def predict_step(*args, **kwargs):
        try:
            return default(*args, **kwargs)
        except (AttributeError, TypeError, ValueError, RuntimeError) as error:
            raise UsageError(
                f"{name} has no predict_step, and Lightning's default, forward(batch), failed on a batch"
                f" ({type(error).__name__}: {first_line(error)}): define predict_step"
            ) from None

    model.predict_step = predict_step
