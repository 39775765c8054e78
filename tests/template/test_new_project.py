"""`make new-project DEST=... NAME=...`: a new repository holding the owner's side of the template, renamed, that
installs the library by the template's version and passes its own tests."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from new_project import CODE_NAME, IMAGES, LIBRARY, PACKAGE, RECORD, TRAILER, check_name, head_commit, rename
from support import GIT_ENV, UV, template_repository

NAME = f"{PACKAGE}_copy"  # the template itself is `project`; a copy of a copy works the same way
# The design's top level of a copy (README.md is its own, written from scripts/copy-README.md).
TOP_LEVEL = {".ci", ".gitignore", ".pre-commit-config.yaml", ".python-version", ".template.json", "Makefile",
             "README.md", "configs", "docs", "mkdocs.yml", "notebooks", "pyproject.toml", "scripts", "sweeps", "tests",
             "uv.lock", NAME, "LICENSE", ".github", "Dockerfile", ".dockerignore", ".devcontainer"}  # fmt: skip
# The copies' uv (make install's lock check, uv lock --check) takes the tests' interpreter as given, not one it finds on
# PATH: a pyenv shim there, which a copy's .python-version sends through pyenv's scripts, cost ~0.4 s a uv command.
ENV = {**GIT_ENV, "UV_PYTHON": sys.executable}
SCRATCH = ["my_run.yaml", "configs/mine.yaml", "my_digits.npy"]  # a user's files, never committed in the template


def test_the_package_is_renamed_where_it_is_code_and_nowhere_else():
    code = 'python -m project fit; from project.cli import x; "project.networks.MLP"; project/data.py; ["project*"]'
    assert rename(code, NAME) == code.replace(PACKAGE, NAME)
    prose = "[project.optional-dependencies] a project template; pyproject.toml; pypi.org/project/x; new-project"
    assert rename(prose, NAME) == prose


# Not identifiers; the template's own; names the copy's imports or folders would find instead of the package; folders
# the copy's .gitignore ignores (runs/: none of the package was committed).
@pytest.mark.parametrize("name", ["My-Exp", "1exp", "class", PACKAGE, "torch", "numpy", "lightning_runs", "configs",
                                  "tests", "json", "runs", "lightning_logs"])  # fmt: skip
def test_a_name_that_is_not_a_new_package_name_is_refused(name):
    with pytest.raises(ValueError):
        check_name(name)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """This template as a repository of one commit, and a user's scratch files beside it, not committed."""
    template = template_repository(tmp_path_factory.mktemp("template") / "template")
    for name in SCRATCH:
        (template / name).write_text("mine\n")
    return template


def new_project(template, dest, *variables):
    """`make new-project DEST=<dest> NAME=project_copy [VARIABLE=value ...]` in `template`: what it said."""
    command = ["make", "--no-print-directory", "new-project", f"DEST={dest}", f"NAME={NAME}", *variables]
    command.append(f"PYTHON={sys.executable}")
    result = subprocess.run(command, cwd=template, capture_output=True, text=True, env=ENV)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def made(template):
    dest = template.parent / "my-exp"
    return dest, new_project(template, dest)


def files(folder):
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts}


def make_at_once(template, dest, names) -> list[subprocess.CompletedProcess]:
    """`make new-project DEST=<dest> NAME=<each name>`, all started at the same moment."""
    started = [
        subprocess.Popen(
            ["make", "--no-print-directory", "new-project", f"DEST={dest}", f"NAME={name}", f"PYTHON={sys.executable}"],
            cwd=template,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in names
    ]
    said = [p.communicate(timeout=120) for p in started]
    return [
        subprocess.CompletedProcess(p.args, p.returncode, *out_err) for p, out_err in zip(started, said, strict=True)
    ]


def test_two_copies_into_one_dest_at_once_make_one_and_refuse_the_other(template, tmp_path):
    dest = tmp_path / "one dest"  # with a space: one folder, not two arguments
    first, second = make_at_once(template, dest, ["alpha", "beta"])
    made, refused = (first, second) if first.returncode == 0 else (second, first)
    assert made.returncode == 0 and refused.returncode != 0, (first.stderr, second.stderr)
    assert re.search(r"error: .*one dest (is being made by another|exists and is not empty)", refused.stderr)
    package = "alpha" if made is first else "beta"
    assert {p.name for p in dest.iterdir()} >= {package, "configs"} and not (
        dest / ("beta" if package == "alpha" else "alpha")
    ).exists()
    assert not (dest / ".new-project-claim").exists()


def test_a_dest_that_is_a_file_is_one_line_and_left_as_it_was(template, tmp_path):
    dest = tmp_path / "notes.txt"
    dest.write_text("mine\n")
    (result,) = make_at_once(template, dest, ["mine"])
    assert result.returncode != 0 and f"error: {dest} is a file" in result.stderr and "Traceback" not in result.stderr
    assert dest.read_text() == "mine\n"


def test_a_dest_inside_a_file_or_a_link_to_nowhere_is_one_line(template, tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    inside, dangling = (tmp_path / "notes.txt/exp", tmp_path / "gone")
    (under_file,) = make_at_once(template, inside, ["mine"])
    (to_nowhere,) = make_at_once(template, dangling, ["mine"])
    assert under_file.returncode != 0 and f"error: cannot make {inside}: Not a directory" in under_file.stderr
    assert to_nowhere.returncode != 0 and f"error: {dangling} is a link to {tmp_path / 'nowhere'}" in to_nowhere.stderr
    assert "Traceback" not in under_file.stderr + to_nowhere.stderr
    assert not (tmp_path / "nowhere").exists()


def test_the_copy_holds_the_designs_top_level_with_the_package_renamed_and_no_machinery(made):
    copy, _ = made
    assert {path.name for path in copy.iterdir()} - {".git"} == TOP_LEVEL
    assert not (copy / "tests/template").exists()
    # Only what its owner runs or edits: the template's tooling (new_project.py, update_template.py) stays there.
    assert sorted(path.name for path in (copy / "scripts").iterdir()) == ["slurm.sh", "sweep-array.sh"]
    assert (copy / NAME / "cli.py").is_file() and os.access(copy / ".ci/run", os.X_OK)
    lines = sum(len(path.read_text().splitlines()) for path in (copy / NAME).rglob("*.py"))
    # The digits' in-memory path (~790 lines), the confusion matrix on a figure of its own, and the folds that cv
    # and sweep --folds give every DataModule (~40), and what the type check needs declared (~10: Lightning types
    # `hparams` as a plain mapping, an nn.ModuleDict its items as Modules), and a blank line between the library's
    # imports and the package's own (2: isort's sections, so a copy of any name sorts alike), and the fingerprint of
    # what each DataModule read (~18: a fit resumed on other data is refused). Images on disk (~430) only when asked.
    assert lines <= 1000, f"the copy's package holds {lines} lines"
    assert (copy / "README.md").read_text().startswith(f"# {NAME}\n\nStarted from the PyTorch Lightning")
    assert "template.mk" not in files(copy) and not re.search(
        r"^(bench|new-project):", (copy / "Makefile").read_text(), re.M
    )
    for path in files(copy) - {RECORD}:  # the record names the template
        assert not CODE_NAME.search((copy / path).read_text(errors="ignore")), f"{path} still names {PACKAGE}"


@pytest.fixture(scope="module")
def made_with_images(template):
    dest = template.parent / "with-images"
    return dest, new_project(template, dest, "IMAGES=1")


def renamed(path: str) -> str:
    return path.replace(f"{PACKAGE}/", f"{NAME}/", 1)


def test_a_copy_holds_the_image_folder_datamodule_only_when_asked_and_records_the_choice(made, made_with_images):
    (without, _), (with_images, _) = made, made_with_images
    assert {renamed(path) for path in IMAGES} == {f"{NAME}/images.py", f"{NAME}/image_files.py", "tests/test_images.py"}
    assert not any((without / renamed(path)).exists() for path in IMAGES)
    assert all((with_images / renamed(path)).is_file() for path in IMAGES)
    assert f"from {NAME}.image_files import" in (with_images / NAME / "images.py").read_text()
    assert files(with_images) - files(without) == {renamed(path) for path in IMAGES}
    assert json.loads((without / RECORD).read_text())["images"] is False
    assert json.loads((with_images / RECORD).read_text())["images"] is True
    # Each README says what the copy has: the module, or how to get it.
    assert "IMAGES=1" in (without / "README.md").read_text() and "images.py" not in (without / "README.md").read_text()
    assert f"--data {NAME}.images.ImageFolderDataModule" in (with_images / "README.md").read_text()
    # Nothing left in the copy without it names the module it lacks.
    for path in files(without) - {"README.md"}:
        assert not re.search(
            r"\bimage_files\b|\bimages\.py\b|ImageFolderDataModule|test_images",
            (without / path).read_text(errors="ignore"),
        ), path


def test_images_other_than_1_or_0_are_refused_in_one_line_before_anything_is_written(template, tmp_path):
    command = ["make", "--no-print-directory", "new-project", f"DEST={tmp_path / 'copy'}", f"NAME={NAME}", "IMAGES=yes"]
    refused = subprocess.run(command, cwd=template, capture_output=True, text=True, env=ENV)
    assert refused.returncode != 0 and "IMAGES=yes is not a choice: IMAGES=1 keeps" in refused.stderr
    assert refused.stderr.count("\n") == 1 and not (tmp_path / "copy").exists()


@pytest.mark.parametrize("which", ["made", "made_with_images"])
def test_the_copys_readme_names_only_files_the_copy_has(which, request):
    copy, _ = request.getfixturevalue(which)
    readme = (copy / "README.md").read_text()
    named = set(re.findall(r"\]\(([^)#]+)", readme)) | set(re.findall(r"(?<![\w/.-])([\w.-]+/[\w./-]*\w)", readme))
    named = {path for path in named if "://" not in path and not path.startswith(("/", "git+"))}
    assert named and {path for path in named if not (copy / path).exists()} == set()


def test_the_copys_files_send_their_reader_to_the_templates_docs_which_the_copy_does_not_hold(made, template):
    copy, _ = made
    said = {path: (copy / path).read_text(errors="ignore") for path in files(copy) - {"README.md"}}
    bare = {path for path, text in said.items() if re.search(r"(?<![\w./-])(?<!template's )docs/[\w-]+\.md", text)}
    assert bare == set(), "a copy has no docs/: each mention says it is the template's"
    mentioned = {name for text in said.values() for name in re.findall(r"the template's docs/([\w-]+\.md)", text)}
    assert "updating.md" in mentioned and all((template / "docs" / name).is_file() for name in mentioned)


def library_source(url: str, commit: str) -> str:
    """The copy's [tool.uv.sources] line for the library."""
    return f'{LIBRARY} = {{ git = "{url}", subdirectory = "{LIBRARY}", rev = "{commit}" }}'


def test_the_copy_depends_on_the_library_at_the_templates_commit_and_runs_only_its_own_tests(made, template):
    pyproject = (made[0] / "pyproject.toml").read_text()
    assert library_source(f"file://{template}", head_commit(template)) in pyproject
    assert f'name = "{NAME}"' in pyproject and 'testpaths = ["tests"]' in pyproject


def test_the_copys_lock_holds_the_templates_pins_and_uv_takes_it_as_it_is(made, template):
    """The copy's uv.lock is written without uv or the network; `uv lock --check` (what make install runs first)
    accepts it offline, and it pins every release the template's does."""
    lock, theirs = (made[0] / "uv.lock").read_text(), (template / "uv.lock").read_text()
    git_source = f"file://{template}?subdirectory={LIBRARY}&rev={head_commit(template)}#{head_commit(template)}"
    assert f'source = {{ git = "{git_source}" }}' in lock and 'editable = "lightning-runs"' not in lock
    assert "/opt/" not in lock and "file:///" not in theirs, "the template's lock names PyPI alone"
    pins = re.compile(r'^name = "(.*)"\nversion = "(.*)"\nsource = \{ registry = "https://pypi.org/simple" \}$', re.M)
    assert pins.findall(lock) == pins.findall(theirs) and len(pins.findall(lock)) > 100
    checked = subprocess.run([UV, "lock", "--check", "--offline"], cwd=made[0], capture_output=True, text=True, env=ENV)
    assert checked.returncode == 0, checked.stderr


def test_a_pyproject_changed_without_relocking_is_refused_in_one_line(made, tmp_path):
    copy = tmp_path / "stale"
    shutil.copytree(made[0], copy, symlinks=True)  # the copy as made (it names the template by its absolute path)
    pyproject = copy / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("dependencies = [\n", 'dependencies = [\n    "rich>=13",\n', 1))
    refused = subprocess.run(["make", "--no-print-directory", "install"], cwd=copy, env=ENV, capture_output=True,
                             text=True)  # fmt: skip
    said = [line for line in refused.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\* ", line)]
    assert refused.returncode == 2 and said == [
        "error: pyproject.toml changed since uv.lock was written: run make lock, then commit uv.lock"
    ], refused.stderr
    assert not (copy / ".venv").exists()


def test_a_copy_of_a_clone_pins_the_remote_that_has_the_commit_and_the_local_clone_otherwise(template, tmp_path):
    """A copy made from a clone installs on any machine that reaches the clone's remote, when the remote has it."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(template), str(clone)], env=ENV, check=True)
    said = new_project(clone, tmp_path / "pushed")
    pyproject = (tmp_path / "pushed/pyproject.toml").read_text()
    assert library_source(f"file://{template}", head_commit(clone)) in pyproject
    assert f"The library comes from origin, {template}, which has commit {head_commit(clone)[:12]}." in said

    (clone / "configs/news.yaml").write_text("# A commit of this clone only.\n")
    subprocess.run(["git", "add", "--all"], cwd=clone, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "Not pushed"], cwd=clone, env=ENV, check=True)
    said = new_project(clone, tmp_path / "local")
    pyproject = (tmp_path / "local/pyproject.toml").read_text()
    assert library_source(f"file://{clone}", head_commit(clone)) in pyproject
    assert f"The library comes from the local path {clone}: no remote of it has commit" in said


def test_files_the_template_never_committed_stay_behind_and_are_named(made):
    copy, said = made
    assert not set(SCRATCH) & files(copy)
    line = next(line for line in said.splitlines() if line.startswith("Left behind, as not committed"))
    assert all(name in line for name in SCRATCH)


def test_the_copy_is_a_new_git_repository_that_records_the_template_and_its_commit(made, template):
    copy, _ = made
    log = subprocess.run(["git", "log", "--format=%B"], cwd=copy, capture_output=True, text=True, check=True).stdout
    record = json.loads((copy / RECORD).read_text())
    assert record == {"template": str(template), "commit": head_commit(template), "template_package": PACKAGE,
                      "package": NAME, "images": False}  # fmt: skip
    assert log.strip().endswith(f"{TRAILER} {record['commit']}")  # where `make update-template` merges onto
    assert NAME in log.splitlines()[0]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=copy, capture_output=True, text=True)
    assert status.stdout == ""


def test_the_copy_is_mit_licensed_by_default_and_takes_the_license_and_holder_asked_in_a_commit_of_its_own(
    made, template, tmp_path
):
    """The owner's LICENSE is committed after the template's commit, which never holds it: make update-template merges
    the template's side onto that commit, so an update never touches the copy's license."""
    default = (made[0] / "LICENSE").read_text()
    assert default.startswith("MIT License") and f"The {NAME} authors" in default
    asked = tmp_path / "asked"
    new_project(template, asked, "LICENSE=Apache-2.0", "HOLDER=Jane Doe & Co")  # a holder with a space and an &
    text = (asked / "LICENSE").read_text()
    assert "Apache License" in text and re.search(r"Copyright \d{4} Jane Doe & Co$", text, flags=re.M)
    assert 'license = "Apache-2.0"' in (asked / "pyproject.toml").read_text()
    log = subprocess.run(["git", "log", "--format=%s"], cwd=asked, capture_output=True, text=True).stdout.splitlines()
    assert log == [f"License {NAME}: Apache-2.0, copyright Jane Doe & Co", f"Start {NAME} from the PyTorch Lightning"
                   " project template"]  # fmt: skip
    started = subprocess.run(["git", "ls-tree", "--name-only", "HEAD^"], cwd=asked, capture_output=True, text=True)
    assert "LICENSE" not in started.stdout.split() and ".github" in started.stdout.split()
    refused = subprocess.run(["make", "--no-print-directory", "new-project", f"DEST={tmp_path / 'gpl'}", f"NAME={NAME}",
                              "LICENSE=GPL-3.0", f"PYTHON={sys.executable}"], cwd=template, capture_output=True,
                             text=True, env=ENV)  # fmt: skip
    assert refused.returncode != 0 and "error: 'GPL-3.0' is not a license a copy can take" in refused.stderr
    assert not (tmp_path / "gpl").exists(), "refused before anything is written"


def own_tests(copy: Path, *files: str) -> subprocess.CompletedProcess:
    """The copy's own test files, run there in one pytest with the copy's package importable, each passed test listed
    (-rA)."""
    tests = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", *files]
    return subprocess.run(tests, cwd=copy, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(copy)})


def passed(tested: subprocess.CompletedProcess, file: str) -> int:
    """How many of `file`'s tests passed: its PASSED lines in -rA's summary, whatever the run's other file did."""
    return len(re.findall(rf"^PASSED {re.escape(file)}::", tested.stdout, flags=re.M))


SHIPPED, TYPES = "tests/test_shipped_files.py", "tests/test_types.py"


@pytest.fixture(scope="module")
def made_tested(made) -> subprocess.CompletedProcess:
    """The copy's (no images) shipped-files and type-check tests in one pytest: one start, which imports the copy's
    package and the library, for the two tests below that read it."""
    return own_tests(made[0], SHIPPED, TYPES)


def test_the_copys_workflow_dockerfile_and_devcontainer_pass_their_checks_in_the_copy(made, made_tested):
    """The copy's own tests/test_shipped_files.py, run there: its workflow, image and devcontainer name only the
    copy's make targets (none of template.mk's) and are clean under zizmor, actionlint, hadolint and their schemas."""
    copy, _ = made
    assert f'"name": "{NAME}"' in (copy / ".devcontainer/devcontainer.json").read_text()
    assert f'ENTRYPOINT ["python", "-m", "{NAME}"]' in (copy / "Dockerfile").read_text()
    assert passed(made_tested, SHIPPED) == 6, made_tested.stdout[-3000:]  # none skipped


@pytest.mark.parametrize("which", ["made", "made_with_images"])
def test_the_copy_is_clean_under_its_lint_and_type_check(which, request):
    """ruff as the copy's make lint runs it (the renames lengthen no line past the limit), and the copy's own
    tests/test_types.py, run there: its [tool.ty] names the renamed package, which ty finds clean, and leaves out the
    template's lightning-runs/ folder (a copy's library is installed). With the image-folder DataModule or without."""
    copy, _ = request.getfixturevalue(which)
    ruff = str(Path(sys.executable).with_name("ruff"))
    for check in ([ruff, "check", "."], [ruff, "format", "--check", "."]):
        linted = subprocess.run(check, cwd=copy, capture_output=True, text=True)
        assert linted.returncode == 0, linted.stdout[-3000:]
    assert "extra-paths" not in (copy / "pyproject.toml").read_text()
    tested = request.getfixturevalue("made_tested") if which == "made" else own_tests(copy, TYPES)
    assert passed(tested, TYPES) == 3, tested.stdout[-3000:]


def without_the_template(copy: Path) -> dict[str, str]:
    """An environment that imports the copy's package and fails on the template's."""
    blocker = copy.parent / "blocker"
    (blocker / PACKAGE).mkdir(parents=True, exist_ok=True)
    (blocker / PACKAGE / "__init__.py").write_text(f"raise ImportError('the copy imported {PACKAGE}')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, [copy, blocker])), "OMP_NUM_THREADS": "1"}


@pytest.mark.slow
def test_the_copy_trains_under_its_new_name_and_passes_its_own_tests(made):
    """With the template's package unimportable; the library is this template's (the version the copy names)."""
    copy, _ = made
    env = without_the_template(copy)
    fit = [sys.executable, "-m", NAME, "fit", "--config", "configs/digits.yaml", "--trainer.fast_dev_run=true"]
    fitted = subprocess.run(fit, cwd=copy, capture_output=True, text=True, env=env, timeout=600)
    assert fitted.returncode == 0, fitted.stderr[-3000:]
    tests = [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider"]
    tested = subprocess.run(tests, cwd=copy, capture_output=True, text=True, env=env, timeout=600)
    assert tested.returncode == 0, tested.stdout[-3000:]
    assert re.search(r"\d+ passed", tested.stdout) and " failed" not in tested.stdout


@pytest.mark.slow
def test_a_copy_with_the_image_folder_datamodule_passes_its_tests_of_it_under_its_new_name(made_with_images):
    copy, _ = made_with_images
    tests = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_images.py"]
    tested = subprocess.run(tests, cwd=copy, capture_output=True, text=True, env=without_the_template(copy))
    assert tested.returncode == 0 and re.search(r"\b\d\d+ passed", tested.stdout), tested.stdout[-3000:]


@pytest.mark.slow
def test_the_copys_own_tests_pass_once_cli_py_trains_a_regression_of_the_owners(template, tmp_path):
    """cli.py's model and DataModule switched to a module of another task (experiments/regression.py, written as
    Lightning's docs write one), and its best checkpoint to the loss that task logs: the copy's workflow and config
    tests read the run, not the example."""
    copy = tmp_path / "switched"
    new_project(template, copy)
    shutil.copy(Path(__file__).parent / "experiments/regression.py", copy / NAME / "regression.py")
    cli = copy / NAME / "cli.py"
    switched = {
        "DigitsClassifier, DigitsDataModule, trainer_defaults": "Regressor, DiabetesData, trainer_defaults",
        '"best_checkpoint", monitor="val/acc", mode="max"': '"best_checkpoint", monitor="val/loss", mode="min"',
        "import lightning_runs\n": f"import lightning_runs\nfrom {NAME}.regression import DiabetesData, Regressor\n",
    }
    text = cli.read_text()
    for old, new in switched.items():
        assert old in text, old
        text = text.replace(old, new)
    cli.write_text(text)
    env = {**os.environ, "PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1"}
    tests = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_workflow.py"]
    tested = subprocess.run([*tests, "tests/test_configs.py"], cwd=copy, capture_output=True, text=True, env=env)
    assert tested.returncode == 0, tested.stdout[-3000:]
    assert re.search(r"\b(\d\d+) passed", tested.stdout) and " failed" not in tested.stdout, tested.stdout[-3000:]
