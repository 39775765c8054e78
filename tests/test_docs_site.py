"""The docs site builds strictly (`make docs`): a broken link or anchor, a page left out of the nav, or an API name that
no longer exists fails it; the API page is rendered from the package's docstrings."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_site_builds_strictly(tmp_path):
    mkdocs = Path(sys.executable).parent / "mkdocs"
    built = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    api = (tmp_path / "site/api/index.html").read_text()
    assert 'class="doc doc-heading"' in api, "the API page is rendered from the docstrings"
