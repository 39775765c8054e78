"""YAML checked as it is composed, before anything is built from it (linear in its size): no aliases that expand
past MAX_YAML_NODES values or MAX_YAML_DEPTH levels, at most MAX_CONFIG_KEYS keys, and no key given twice in one
mapping. Every ProjectParser loads config files and inline values through bounded_yaml_load (parser.py)."""

import yaml
from jsonargparse import ArgumentError, get_loader

from lightning_runs.errors import UsageError
from lightning_runs.limits import MAX_CONFIG_KEYS, MAX_YAML_DEPTH, MAX_YAML_NODES


class ParseError(ArgumentError, UsageError):
    """An ArgumentError to jsonargparse, which catches and rewraps these internally; a UsageError to the entry point."""

    def __init__(self, message: str) -> None:
        super().__init__(None, message)


def bounded_yaml_load(stream):
    """jsonargparse's YAML loader, after checking the document as composed (check_document)."""
    # A short plain value (`2`, `[1, 2]`) holds no key or alias and cannot nest deep: it is not composed twice.
    if isinstance(stream, str) and (":" in stream or "*" in stream or len(stream) > MAX_YAML_DEPTH):
        root = compose(stream)
        if root is not None:
            check_document(root)
    return get_loader("yaml")(stream)


def compose(text: str) -> yaml.Node | None:
    """The document's nodes, composed by libyaml where PyYAML has it (no Python call per level); its limit of 1,000
    levels, and PyYAML's recursion where it composes, are said as the depth limit is."""
    try:
        return yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.MarkedYAMLError as error:
        if "maximum nesting depth" not in str(error):
            raise
    except RecursionError:
        pass
    # Not a YAMLError, which jsonargparse answers by taking the text for a string (`--model.lr [[[...]]]`).
    raise ParseError(_TOO_DEEP)


def check_document(root: yaml.Node) -> None:
    """Linear in the document's size: at most MAX_CONFIG_KEYS keys, none twice in one mapping (check_keys), and no
    aliases that expand past MAX_YAML_NODES values or MAX_YAML_DEPTH levels (_check_expanded)."""
    check_keys(root)
    _check_expanded(root)


def check_keys(root: yaml.Node) -> None:
    """YAML lets the last of two equal keys win without a word: `trainer: {max_epochs: 1}` then another `trainer:`
    further down dropped the first whole. Refused, naming the key and both lines, as the key count past the limit."""
    keys, seen, stack = 0, set(), [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:  # an alias: one shared node, checked once
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        if not isinstance(node, yaml.MappingNode):
            continue
        keys += len(node.value)
        if keys > MAX_CONFIG_KEYS:
            raise yaml.YAMLError(f"refusing YAML of more than {MAX_CONFIG_KEYS:,} keys (lightning_runs/limits.py)")
        lines: dict[str, int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value != "<<":  # `<<: *base` merges; it is no key
                if key.value in lines:
                    raise yaml.YAMLError(
                        f"refusing YAML that gives the key {key.value!r} twice (lines {lines[key.value]} and"
                        f" {key.start_mark.line + 1}), where the last would silently win; keep one"
                    )
                lines[key.value] = key.start_mark.line + 1
            stack.append(value)


_TOO_DEEP = (
    f"refusing YAML nested more than {MAX_YAML_DEPTH} levels deep (lists or mappings one inside another;"
    " lightning_runs/limits.py)"
)


def _check_expanded(root: yaml.Node) -> None:
    """Values and levels under `root` once every alias is expanded, an alias being one shared node counted once.
    Iterative (the depth is what is bounded): a node is summed once its children are."""
    done: dict[int, tuple[int, int]] = {}  # id of a node -> (values, levels) under it, aliases expanded
    open_nodes: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        children = node.value if isinstance(node, yaml.SequenceNode) else []
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        if children_done:
            values = 1 + sum(done[id(child)][0] for child in children)
            levels = 0 if isinstance(node, yaml.ScalarNode) else 1 + max((done[id(c)][1] for c in children), default=0)
            if values > MAX_YAML_NODES:
                raise yaml.YAMLError(f"refusing YAML whose aliases expand to more than {MAX_YAML_NODES:,} values")
            if levels > MAX_YAML_DEPTH:
                raise ParseError(_TOO_DEEP)
            done[id(node)] = (values, levels)
            open_nodes.discard(id(node))
        elif id(node) in open_nodes:  # met again inside itself: everything above its mark on the stack is under it
            raise yaml.YAMLError("refusing YAML with a recursive alias")
        elif id(node) not in done:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children)
