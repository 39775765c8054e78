"""Every promise of docs/reliability.md and docs/contract.md names the tests that hold it: each paragraph and each table
row carries `<!-- tests: test_file.py::test_name ... -->` (hidden in the rendered page), and each name is a test of
that file. A promise added without a test, or a test renamed or deleted under a promise, fails here; a promise retired
goes from the docs in the same commit. Test files are named by their file name alone, unique across the suites."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("docs/reliability.md", "docs/contract.md")
SUITES = ("lightning-runs/tests", "tests")
MARK = re.compile(r"<!--\s*tests:(.*?)-->", re.S)
SEPARATOR = re.compile(r"\|[-:| ]+")


def promises(text: str) -> list[str]:
    """Each paragraph (a list or a block of lines) and each table row; headings, code blocks and table heads aside."""
    found, paragraph, fenced, lines = [], [], False, [*text.splitlines(), ""]
    for i, line in enumerate(lines):
        fenced = fenced != line.startswith("```")
        if line.strip() and not (fenced or line.startswith(("```", "#", "|"))):
            paragraph.append(line)
            continue
        found, paragraph = found + (["\n".join(paragraph)] if paragraph else []), []
        if line.startswith("|") and not fenced and not (SEPARATOR.fullmatch(line) or SEPARATOR.fullmatch(lines[i + 1])):
            found.append(line)  # a row, not a table's head or its separator
    return found


def known_tests() -> dict[str, set[str]]:
    """Test file name -> the test functions (and Class::method) it defines."""
    found: dict[str, set[str]] = {}
    for path in [path for suite in SUITES for path in (ROOT / suite).rglob("test_*.py")]:
        assert path.name not in found, f"two test files named {path.name}: name them apart, or by their path here"
        tree = ast.parse(path.read_text())
        names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        for cls in [node for node in tree.body if isinstance(node, ast.ClassDef)]:
            names |= {f"{cls.name}::{node.name}" for node in cls.body if isinstance(node, ast.FunctionDef)}
        found[path.name] = {name for name in names if name.rpartition("::")[2].startswith("test")}
    return found


def unheld(doc: str, text: str, known: dict[str, set[str]]) -> list[str]:
    """Each promise of `text` that names no test, or a test `known` does not hold."""
    problems = []
    for promise in promises(text):
        ids = [i for mark in MARK.findall(promise) for i in re.split(r"[\s,]+", mark.strip()) if i]
        where = f"{doc}: {promise[:70]!r}"
        problems += [f"{where}: names no test"] if not ids else []
        for node in ids:
            file, _, name = node.partition("::")
            if name.partition("[")[0] not in known.get(file, ()):  # a parametrized id by its function
                problems.append(f"{where}: no test {node}")
    return problems


def test_every_promise_names_tests_that_exist():
    known = known_tests()
    problems = [problem for doc in DOCS for problem in unheld(doc, (ROOT / doc).read_text(), known)]
    assert not problems, "\n".join(problems)


def test_a_promise_without_a_test_or_with_a_missing_one_is_found():
    held = "<!-- tests: test_promises.py::test_every_promise_names_tests_that_exist[x] -->"
    doc = f"# Head\n\nIntro,\nheld.\n{held}\n\n| a | b |\n|---|---|\n| row | none |\n| row | {held} |\n\n"
    doc += "```\n| code | is no row |\n```\n\nAnother.\n<!-- tests: test_promises.py::test_gone -->\n"
    assert unheld("doc", doc, known_tests()) == [
        "doc: '| row | none |': names no test",
        "doc: 'Another.\\n<!-- tests: test_promises.py::test_gone -->': no test test_promises.py::test_gone",
    ]
