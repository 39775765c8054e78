"""The limits of limits.py that need code where the value enters: config files before jsonargparse opens them, and
tensors before they are allocated, while the model, the data and the callbacks are instantiated.

The machinery cannot know which of an owner's options sizes the network (`channels`, `hidden`, `width`, ...), so it
watches what any of them asks torch for: each tensor a constructor (`torch.empty`, `zeros`, ...) is about to build,
and each parameter a module registers. A size past MAX_TENSOR_VALUES, below zero, or a parameter with no value at all
is refused naming the tensor and the model options holding that size.
"""

import math
import stat
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
import yaml
from torch.nn.modules.module import register_module_parameter_registration_hook
from torch.nn.parameter import UninitializedParameter
from torch.overrides import TorchFunctionMode

from lightning_runs.cli.command_line import SUBCOMMANDS
from lightning_runs.cli.yaml_limits import ParseError, check_document, compose
from lightning_runs.contract.names import DERIVED
from lightning_runs.errors import UsageError
from lightning_runs.limits import MAX_CONFIG_BYTES, MAX_TENSOR_VALUES
from lightning_runs.private import subcommand_parser, typed_options

CONFIG_OPTIONS = ("--config",)  # LightningCLI's ActionConfigFile
SECTIONS = ("model", "data")  # where the options that size a network are
# The constructors whose first arguments are a size (or which take `size=`): what nn.Module initializers call.
CONSTRUCTORS = {torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn, torch.empty_strided}


def check_config_files(args: list[str], sections: Collection[str] = ()) -> None:
    """Each `--config` file is a regular file (a FIFO or /dev/zero would block or never end) of at most
    MAX_CONFIG_BYTES, whose YAML is checked as parser.py checks any, here with the file's name in the line.
    `sections`: the keys that hold a group of options (`trainer`), given as a mapping or a string (a file of them)."""
    for index, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        if name not in CONFIG_OPTIONS or (not equals and index + 1 == len(args)):
            continue
        path = Path(value if equals else args[index + 1])
        try:
            status = path.stat()
        except OSError:
            continue  # missing: jsonargparse says so, in one line
        if not stat.S_ISREG(status.st_mode):
            raise UsageError(f"--config {path}: not a regular file (a pipe or a device); give a YAML file")
        if status.st_size > MAX_CONFIG_BYTES:
            raise UsageError(
                f"--config {path}: {status.st_size:,} bytes, more than the {MAX_CONFIG_BYTES:,} a config may hold"
                " (lightning_runs/limits.py)"
            )
        try:
            root = compose(path.read_text())
            if root is not None:
                check_document(root)
        except yaml.MarkedYAMLError:
            continue  # not YAML: jsonargparse's own line says where
        except UnicodeDecodeError as error:
            raise UsageError(f"--config {path}: not a YAML text file (byte {error.start} is not UTF-8)") from None
        except (yaml.YAMLError, ParseError) as error:
            raise UsageError(f"--config {path}: {error}") from None
        _check_sections(root, sections, path)


# What a section's value may be besides a mapping: a string names a file of its options (or holds them inline).
KINDS = {
    "tag:yaml.org,2002:null": "empty",
    "tag:yaml.org,2002:bool": "true or false",
    "tag:yaml.org,2002:int": "a number",
    "tag:yaml.org,2002:float": "a number",
}


def config_sections(parser, args: list[str]) -> set[str]:
    """The keys of the command's config that hold a group of options (`trainer`, `early_stopping`, ...)."""
    subcommand = next((arg for arg in args if arg in SUBCOMMANDS), "fit")
    return {key for key, *_, group in typed_options(subcommand_parser(parser, subcommand)) if group and "." not in key}


def _check_sections(root: yaml.Node, sections: Collection[str], path: Path) -> None:
    """`trainer: [1, 2]` or `trainer: 5` was an AttributeError traceback, or dropped without a word when an option
    such as --trainer.max_epochs followed it."""
    for key, value in root.value if isinstance(root, yaml.MappingNode) else []:
        if key.value not in sections or isinstance(value, yaml.MappingNode):
            continue
        kind = "a list" if isinstance(value, yaml.SequenceNode) else KINDS.get(value.tag)
        if kind is not None:
            raise UsageError(
                f"--config {path}: {key.value} (line {key.start_mark.line + 1}) is {kind}, but it holds options:"
                f" give them as a mapping, one `option: value` a line indented under `{key.value}:`"
            )


@contextmanager
def bounded_tensors(config) -> Iterator[None]:
    """Within: every tensor a constructor builds, and every parameter registered, is checked first. `config`: the
    subcommand's, whose model options are named in the refusal."""
    refuse = _Refusal(config)

    def on_parameter(module, name, parameter):
        lazy = isinstance(parameter, UninitializedParameter)  # nn.LazyLinear: sized at the first batch
        if parameter is not None and not lazy and parameter.numel() == 0:
            refuse(f"{type(module).__name__}.{name} of shape {tuple(parameter.shape)} holds no value", parameter.shape)

    handle = register_module_parameter_registration_hook(on_parameter)
    try:
        with _SizeCheck(refuse):
            yield
    finally:
        handle.remove()


class _SizeCheck(TorchFunctionMode):
    def __init__(self, refuse) -> None:
        super().__init__()
        self.refuse = refuse

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in CONSTRUCTORS:
            size = _size(args, kwargs)
            if any(dimension < 0 for dimension in size):
                self.refuse(f"a tensor of shape {size} has a negative size", size)
            if math.prod(size) > MAX_TENSOR_VALUES:
                self.refuse(
                    f"a tensor of shape {size} would hold {math.prod(size):,} values, more than the"
                    f" {MAX_TENSOR_VALUES:,} accepted (lightning_runs/limits.py)",
                    size,
                )
        return func(*args, **kwargs)


def _size(args: tuple, kwargs: dict) -> tuple[int, ...]:
    """`torch.empty(3, 4)`, `torch.empty((3, 4))`, `torch.full((3, 4), 0.0)`, `torch.zeros(size=(3, 4))`: (3, 4)."""
    size = kwargs.get("size")
    if size is None and args:
        size = args[0] if isinstance(args[0], tuple | list | torch.Size) else args
    dimensions = [d for d in (size or ()) if isinstance(d, int) and not isinstance(d, bool)]
    return tuple(int(d) for d in dimensions)


class _Refusal:
    """Raises the one line: what was asked, and the model and data options holding the offending size (a class count
    is the data's); none found: --model."""

    def __init__(self, config) -> None:
        sections = {key: config.get(key) for key in SECTIONS} if config is not None else {}
        # --model and --data are a class path and its arguments: the options are named without `init_args`
        self.sections = {k: v.get("init_args") if hasattr(v, "class_path") else v for k, v in sections.items()}

    def __call__(self, what: str, size) -> None:
        culprit = int(min(size, default=0) if min(size, default=0) <= 0 else max(size))
        # A zero or negative size is a typo in the network's options; a huge one may be the data's (1e9 classes).
        sections = {k: v for k, v in self.sections.items() if culprit > 0 or k == "model"}
        found = [(f"{k}.{option}", v) for k, section in sections.items() for option, v in _holding(section, culprit)]
        if any(key.startswith("data.") for key, _ in found):  # the model's copy of it follows from the data
            found = [(key, v) for key, v in found if key not in DERIVED]
        options = [f"--{key} {list(v) if isinstance(v, tuple) else v}" for key, v in found] or ["--model"]
        raise UsageError(f"{', '.join(options)}: {what}; give sizes of at least 1 and below the limit")


def _holding(section, number: int) -> list[tuple[str, object]]:
    """(key, value) of each option under `section` (a jsonargparse Namespace: its items are the leaves, keys
    dotted) that is `number` or a list of ints holding it."""
    items = section.items() if hasattr(section, "items") else []
    return [(key, value) for key, value in items if number in _ints(value)]


def _ints(value) -> list[int]:
    values = value if isinstance(value, tuple | list) else [value]
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
