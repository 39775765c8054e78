"""Set-up safe to start twice: `make sweep` in two terminals of a fresh checkout (the docs' way to start two workers)
both bootstrap uv into .uv/ where none is on PATH; the second took the first's .uv/bin/uv, still being written, as
made and failed with `/bin/sh: .uv/bin/uv: Text file busy`. The bootstrap builds in a folder of its own and renames it
into place: .uv/bin/uv exists only whole, and both succeed.

Offline: pip installs a stand-in wheel named uv (a script, as the real wheel's binary is a script of the wheel) from a
local folder; the stand-in answers `uv lock --check` and `uv sync` as the real one does when all is in place."""

import functools
import os
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest

from support import wait_for

ROOT = Path(__file__).resolve().parents[2]
# A second's work in each call, as a real uv sync takes, and the real binary's size (~30 MB, written for a while):
# the other make's pip install lands while this one runs it.
STAND_IN = '#!/bin/sh\nsleep 1\necho "uv $*"\nexit 0\n' + "#" * 30_000_000 + "\n"


def stand_in_uv_wheel(folder: Path) -> Path:
    """uv-0.9.0-py3-none-any.whl whose only file is the `uv` script pip installs into the venv's bin/."""
    folder.mkdir()
    wheel, info = folder / "uv-0.9.0-py3-none-any.whl", "uv-0.9.0.dist-info"
    files = {
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: uv\nVersion: 0.9.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "uv-0.9.0.data/scripts/uv": STAND_IN,
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            entry = zipfile.ZipInfo(name)
            entry.external_attr = (stat.S_IFREG | 0o755) << 16  # a regular file, executable: pip keeps its mode
            archive.writestr(entry, text)
        archive.writestr(f"{info}/RECORD", "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"]))
    return folder


@pytest.mark.slow
def test_a_second_install_started_while_the_first_bootstraps_uv_waits_for_a_whole_one_and_both_succeed(tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, checkout / name)
    tools = {shutil.which(tool) for tool in ("python3", "make", "sh", "sleep", "mktemp", "rm", "sed")}
    path = os.pathsep.join(dict.fromkeys(str(Path(tool).parent) for tool in tools if tool))
    assert not shutil.which("uv", path=path), "a uv on PATH: make would not bootstrap one"
    env = {"PATH": path, "HOME": str(tmp_path), "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"}
    env |= {"PIP_FIND_LINKS": str(stand_in_uv_wheel(tmp_path / "wheels")), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    if "PYENV_ROOT" in os.environ:  # pyenv's python3 shim finds its Pythons there
        env["PYENV_ROOT"] = os.environ["PYENV_ROOT"]
    start = functools.partial(
        subprocess.Popen, ["make", "install"], cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    first = start()
    uv = checkout / ".uv/bin/uv"
    # The second starts as soon as a uv is there (looked for each ms): pip was writing it, make took it as made.
    wait_for(lambda: uv.exists() or first.poll() is not None, 300, "the first make's uv", every=0.001)
    makes = [first, start()]
    outputs = [make.communicate(timeout=300)[0].decode() for make in makes]
    assert [make.returncode for make in makes] == [0, 0], "\n".join(outputs)
    assert all("uv sync --locked --quiet" in output for output in outputs), outputs
    assert sorted(path.name for path in checkout.iterdir()) == [".uv", "Makefile", "pyproject.toml"], "no half-made .uv"
