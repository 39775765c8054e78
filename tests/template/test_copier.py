"""The spike of docs/updating.md ("Copies by Copier"): copier.yml makes the same copy as `make new-project`, and
`copier update` merges a later template commit into an edited copy, and copier's package question refuses what
make new-project refuses."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from new_project import head_commit
from support import GIT_ENV, template_repository

# The venv's (the dev group installs copier and copier-template-extensions), else COPIER=<its command> or PATH's.
VENV_COPIER = Path(sys.executable).parent / "copier"
COPIER = os.environ.get("COPIER") or (str(VENV_COPIER) if VENV_COPIER.exists() else shutil.which("copier"))
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not COPIER, reason="copier is not installed")]
NAME = "my_exp"


def run(cwd, *command):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=GIT_ENV)
    assert result.returncode == 0, result.stderr
    return result.stdout


def copier_copy(template, dest, *args):
    run(template.parent, COPIER, "copy", "--quiet", "--trust", "--defaults", "-d", f"package={NAME}", *args,
        str(template), str(dest))  # fmt: skip


def tree(folder):
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts
    }


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return template_repository(tmp_path_factory.mktemp("template") / "template")


@pytest.mark.parametrize("images", [False, True])
def test_copier_makes_the_copy_that_make_new_project_makes(template, tmp_path, images):
    """Without the image-folder DataModule by default, with it where asked (copier's `images`, IMAGES=1)."""
    copier_copy(template, tmp_path / "by-copier", "--vcs-ref", head_commit(template), *(["-d", "images=true"] * images))
    script = ["python3", "scripts/new_project.py", str(tmp_path / "by-script"), NAME, *(["--images"] * images)]
    run(template, *script)
    by_copier, by_script = tree(tmp_path / "by-copier"), tree(tmp_path / "by-script")
    assert (f"{NAME}/images.py" in by_copier) is images and (f"{NAME}/images.py" in by_script) is images
    assert by_copier.keys() - by_script.keys() == {".copier-answers.yml"}
    assert by_script.keys() - by_copier.keys() == {".template.json"}
    assert {path for path in by_copier.keys() & by_script.keys() if by_copier[path] != by_script[path]} == set()
    assert run(tmp_path / "by-copier", "git", "status", "--porcelain") == "", "one commit holds the copy"


def test_only_committed_files_arrive_when_the_commit_is_named(template, tmp_path):
    (template / "configs/scratch.yaml").write_text("mine: 1\n")
    try:
        copier_copy(template, tmp_path / "named", "--vcs-ref", head_commit(template))
        copier_copy(template, tmp_path / "head")  # no --vcs-ref: copier's HEAD of a local template is its work tree
    finally:
        (template / "configs/scratch.yaml").unlink()
    assert not (tmp_path / "named/configs/scratch.yaml").exists()
    assert (tmp_path / "head/configs/scratch.yaml").exists(), "copier fixed its dirty copies: drop the --vcs-ref note"


def test_copier_update_merges_a_later_template_commit_into_an_edited_copy(tmp_path):
    template = template_repository(tmp_path / "template")
    copy = tmp_path / "copy"
    copier_copy(template, copy, "--vcs-ref", head_commit(template))
    networks = (copy / NAME / "networks.py").read_text().splitlines(keepends=True)
    line = next(i for i, text in enumerate(networks) if "dropout: float = 0.1," in text)
    networks[0] = networks[0].replace("The networks:", "The networks (mine):")  # the owner's, alone
    networks[line] = networks[line].replace("0.1", "0.2")  # the owner's, where the template also changes
    (copy / NAME / "networks.py").write_text("".join(networks))
    (copy / NAME / "mine.py").write_text('KIND = "project"\n')  # the owner's file: never renamed
    run(copy, "git", "add", "--all")
    run(copy, "git", "commit", "--quiet", "-m", "mine")

    theirs = (template / "project/networks.py").read_text().splitlines(keepends=True)
    theirs[line] = theirs[line].replace("0.1", "0.3")
    (template / "project/networks.py").write_text("".join(theirs))
    (template / "configs/new.yaml").write_text("model:\n  network:\n    class_path: project.networks.MLP\n")
    run(template, "git", "add", "--all")
    run(template, "git", "commit", "--quiet", "-m", "later")
    run(copy, COPIER, "update", "--quiet", "--trust", "--defaults", "--vcs-ref", head_commit(template))

    merged = (copy / NAME / "networks.py").read_text()
    assert "The networks (mine):" in merged and "<<<<<<< before updating" in merged and "0.3," in merged
    assert run(copy, "git", "diff", "--name-only", "--diff-filter=U").split() == [f"{NAME}/networks.py"]
    assert "class_path: my_exp.networks.MLP" in (copy / "configs/new.yaml").read_text()
    assert not (copy / NAME / "images.py").exists(), "copier's default, kept by the update: no image DataModule"
    assert (copy / NAME / "mine.py").read_text() == 'KIND = "project"\n'
    source = next(
        line for line in (copy / "pyproject.toml").read_text().splitlines() if line.startswith("lightning-runs =")
    )
    assert f'subdirectory = "lightning-runs", rev = "{head_commit(template)}"' in source, (
        "the library at the new commit"
    )


@pytest.mark.parametrize("package", ["class", "torch", "numpy", "os", "sys", "lightning_runs", "configs", "tests"])
def test_copier_refuses_the_package_names_make_new_project_refuses(template, tmp_path, package):
    from new_project import check_name

    with pytest.raises(ValueError) as refused:
        check_name(package)
    dest = tmp_path / "copy"
    result = subprocess.run(
        [COPIER, "copy", "--quiet", "--trust", "--defaults", "-d", f"package={package}", "--vcs-ref",
         head_commit(template), str(template), str(dest)], capture_output=True, text=True, env=GIT_ENV,
    )  # fmt: skip
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1].endswith(str(refused.value))  # the same line, word for word
    assert not dest.exists()
