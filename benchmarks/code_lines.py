"""The library's weight: code lines per subpackage, blanks, comments and docstrings left out.

    python -m benchmarks.code_lines [folder]          (default: lightning-runs/lightning_runs)

Issue 43 holds the machinery to 4,000 such lines; tests/template/test_benchmarks.py checks it stays there.
"""

import ast
import io
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


if __name__ == "__main__":
    counts = by_subpackage(Path(sys.argv[1]) if len(sys.argv) > 1 else LIBRARY)
    for part, lines in counts.most_common():
        print(f"{lines:6,d}  {part}")
    print(f"{sum(counts.values()):6,d}  in all")
