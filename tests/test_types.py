"""The type check: ty over the package (and the library, where it sits beside it), run by `make lint` and the
pre-commit hook with the rules pyproject.toml's [tool.ty] sets. Run here too, since it takes about a second."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

import lightning_runs

import project

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(project.__file__).parent
# An exception to the check names its rule and says why on its line: `# ty: ignore[<rule>]  # <why>`.
IGNORE = re.compile(r"#\s*(?:ty|type):\s*ignore\b(?!\[[\w, -]+\]  # \S)")


def test_make_lint_runs_ty_over_the_package_with_the_rules_set():
    hooks = {hook["id"]: hook for repo in yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"]
             for hook in repo["hooks"]}  # fmt: skip
    assert hooks["ty"]["entry"] == ".venv/bin/ty check" and hooks["ty"]["pass_filenames"] is False
    assert re.search(r"^lint:.*\n\t\S*pre-commit run --all-files$", (ROOT / "Makefile").read_text(), flags=re.M)
    ty = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ty"]
    assert PACKAGE.name in ty["src"]["include"]
    assert ty["terminal"]["error-on-warning"] is True and ty["analysis"]["respect-type-ignore-comments"] is False
    assert ty["rules"]["blanket-ignore-comment"] == "error"


def test_every_exception_to_the_check_names_its_rule_and_says_why():
    library = Path(lightning_runs.__file__).parent
    checked = [*PACKAGE.rglob("*.py"), *(library.rglob("*.py") if library.is_relative_to(ROOT) else [])]
    unsaid = [f"{path}:{n}" for path in checked for n, line in enumerate(path.read_text().splitlines(), 1)
              if IGNORE.search(line)]  # fmt: skip
    assert checked and not unsaid


def test_the_package_is_clean_under_ty():
    found = Path(sys.executable).with_name("ty")
    if not found.exists():
        pytest.skip("ty is not installed (the dev group has it: make install)")
    # The library's folder as source: ty cannot follow an editable install's import hook (a copy's is installed).
    library = Path(lightning_runs.__file__).parents[1]
    command = [str(found), "check", "--python", sys.executable, "--extra-search-path", str(library)]
    checked = subprocess.run([*command, "--output-format", "concise"], cwd=ROOT, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
