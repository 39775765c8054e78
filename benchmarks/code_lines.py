"""The library's weight: code lines per subpackage, blanks, comments and docstrings left out.

    python -m benchmarks.code_lines [folder]          (default: lightning-runs/lightning_runs)
    python -m benchmarks.code_lines --map             the library's map, a module a row, as docs/development.md holds it
    python -m benchmarks.code_lines --map --write     that map written into docs/development.md, between its markers

tests/template/test_docs_map.py holds the machinery to its bound (BOUND) of such lines and the map to the code.
"""

import ast
import io
import re
import sys
import tokenize
from collections import Counter
from pathlib import Path

from benchmarks.common import ROOT

LIBRARY = ROOT / "lightning-runs/lightning_runs"
SKIPPED = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)


def code_lines(path: Path) -> int:
    source = path.read_text()
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body:
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    lines = {n for t in tokens if t.type not in SKIPPED for n in range(t.start[0], t.end[0] + 1)}
    return len(lines - docstrings)


def by_subpackage(folder: Path = LIBRARY) -> Counter:
    counts = Counter()
    for path in sorted(folder.rglob("*.py")):
        relative = path.relative_to(folder)
        counts[relative.parts[0] if len(relative.parts) > 1 else "(top)"] += code_lines(path)
    return counts


# Issue 54's layers: the core (run folders, checkpoints and resume, stops, records, the CLI composing them), the parts
# a run may leave out, and the tools beside the core (test_package_layout.py: the core imports none).
LAYERS = {
    "tools": ("tools", "sweeps", "export"),
    "parts": ("loggers", "pictures", "predictions", "parallel", "speed", "data"),
}


def by_layer(counts: Counter) -> Counter:
    layers = Counter()
    for sub, lines in counts.items():
        layers[next((name for name, subs in LAYERS.items() if sub in subs), "core")] += lines
    return layers


def first_sentence(path: Path) -> str:
    """What a module is, as its docstring's first sentence says (every module of the library starts with one)."""
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    paragraph = " ".join(docstring.split("\n\n")[0].split())
    return paragraph.split(". ")[0].removesuffix(".")


def module_map(folder: Path = LIBRARY) -> str:
    """A Markdown table: each module of `folder`, its code lines and its first sentence; then the total."""
    rows = ["| module | code lines | what it is |", "|---|---:|---|"]
    paths = sorted(folder.rglob("*.py"), key=lambda p: (len(p.relative_to(folder).parts) > 1, str(p)))
    for path in paths:
        summary = first_sentence(path).replace("|", "\\|")
        rows.append(f"| `{path.relative_to(folder.parent)}` | {code_lines(path):,} | {summary} |")
    rows.append(f"| **in all** | **{sum(code_lines(p) for p in paths):,}** | |")
    for name, lines in by_layer(by_subpackage(folder)).most_common():
        subs = ", ".join(LAYERS.get(name, ())) or "the rest: run folders, checkpoints, resume, stops, records, the CLI"
        rows.append(f"| {name} | {lines:,} | {subs} |")
    return "\n".join(rows)


MAPPED = ROOT / "docs/development.md"
MARKERS = re.compile(r"(<!-- map: python -m benchmarks.code_lines --map -->\n)(.*?)(<!-- end of map -->)", re.S)


if __name__ == "__main__":
    if sys.argv[1:] == ["--map", "--write"]:
        MAPPED.write_text(MARKERS.sub(lambda m: f"{m[1]}{module_map()}\n{m[3]}", MAPPED.read_text()))
        sys.exit()
    if sys.argv[1:] == ["--map"]:
        print(module_map())
        sys.exit()
    counts = by_subpackage(Path(sys.argv[1]) if len(sys.argv) > 1 else LIBRARY)
    for part, lines in counts.most_common():
        print(f"{lines:6,d}  {part}")
    print(f"{sum(counts.values()):6,d}  in all")
    print("   " + ", ".join(f"{name} {lines:,}" for name, lines in by_layer(counts).most_common()))
