"""The docs cannot go stale where the code can say it: the site builds strictly (a broken link or anchor, a missing API
name), the library's map in docs/development.md is the code's, and every list of the tools names each tool."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.code_lines import LIBRARY, code_lines, module_map
from lightning_runs import TOOLS

ROOT = Path(__file__).resolve().parents[2]
MAP = re.compile(r"<!-- map: python -m benchmarks.code_lines --map -->\n(.*?)<!-- end of map -->", re.S)


def test_the_docs_site_builds_strictly(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    built = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    api = (tmp_path / "site/api/index.html").read_text()
    assert 'id="lightning_runs.checkpoints.LastCheckpoint"' in api, "the API page is rendered from the docstrings"


def test_the_library_map_in_the_development_docs_is_the_codes():
    found = MAP.search((ROOT / "docs/development.md").read_text())
    assert found, "docs/development.md holds the generated map between its markers"
    assert found.group(1).strip() == module_map().strip(), "run: python -m benchmarks.code_lines --map"


def test_the_library_stays_within_its_4000_code_lines():
    assert sum(code_lines(path) for path in LIBRARY.rglob("*.py")) <= 4000


LISTS = ("README.md", "docs/*.md", "lightning-runs/README.md", "lightning-runs/lightning_runs/tools/__init__.py",
         "project/cli.py")  # fmt: skip


@pytest.mark.parametrize("pattern", LISTS)
def test_every_list_of_the_tools_names_each_tool(pattern):
    lists = [
        (path.name, found)
        for path in ROOT.glob(pattern)
        for found in re.findall(r"python -m \S+ \{?(\w+(?:[|,]\w+){3,})\}?", path.read_text())
        if "fit" not in found  # the subcommands' list
    ]
    for name, found in lists:
        assert sorted(re.split("[|,]", found)) == sorted(TOOLS), f"{name}: {found}"
