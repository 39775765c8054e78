"""The notebooks are stored clean and run top to bottom against a real (short) run."""

import json

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from support import ROOT, split_sizes

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_both_notebooks_are_there():
    assert [p.name for p in NOTEBOOKS] == ["01_data.ipynb", "02_run.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_stored_without_outputs(path):
    """The output stripper: commit notebooks after "Clear All Outputs" (outputs make diffs unreadable)."""
    notebook = nbformat.read(path, as_version=4)
    dirty = [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count)
    ]
    assert not dirty, f"{path.name}: cells {dirty} hold outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_first_code_cell_holds_the_parameters(path):
    first = next(cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code")
    assert first.metadata.get("tags") == ["parameters"] and "parameter" in first.source


def execute(path, parameters: str, monkeypatch) -> list[str]:
    """Runs the notebook top to bottom with its parameters cell replaced; the lines it printed. Each `plt.show()`
    drew its figure."""
    notebook = nbformat.read(path, as_version=4)
    first = next(cell for cell in notebook.cells if cell.cell_type == "code")
    first.source = parameters  # what papermill does with a "parameters" cell
    # The kernel is this interpreter ("python3" resolves to sys.executable) importing this checkout.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    client = NotebookClient(notebook, kernel_name="python3", timeout=300, resources={"metadata": {"path": path.parent}})
    client.execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    outputs = [output for cell in code for output in cell.outputs]
    figures = sum("image/png" in output.get("data", {}) for output in outputs)
    assert figures == sum(cell.source.count("plt.show()") for cell in code), "a figure shown for each plt.show()"
    return "".join(output.text for output in outputs if output.output_type == "stream").splitlines()


def first_line_of_the_run(run_dir) -> str:
    """What 02_run.ipynb says of the run it reads first: its folder, status, epochs and steps, from its summary."""
    summary = json.loads((run_dir / "summary.json").read_text())
    return f"{run_dir}: {summary['status']} after {summary['epochs']} epochs, {summary['global_step']} steps"


@pytest.mark.slow
def test_data_notebook_runs(monkeypatch):
    printed = execute(ROOT / "notebooks/01_data.ipynb", "SEED = 3", monkeypatch)
    sizes = split_sizes(seed=3)
    assert printed[0].startswith(f"{sum(sizes.values())} digits of (8, 8) pixels"), printed
    assert [line.split(" digits")[0] for line in printed[1:4]] == [f"{n:>5}: {sizes[n]:4d}" for n in sizes], printed


@pytest.mark.slow
def test_run_notebook_runs_against_a_real_run(short_run, monkeypatch):
    printed = execute(ROOT / "notebooks/02_run.ipynb", f"RUN_DIR = {str(short_run[0])!r}", monkeypatch)
    assert printed[0] == first_line_of_the_run(short_run[0]), printed


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["table", "signal"])
def test_run_notebook_runs_against_a_run_on_data_of_another_shape(kind, tmp_path, monkeypatch):
    """A run on own data (a CSV table, an .npz of 1-D signals), trained in its own folder: the notebook finds its
    data file from there."""
    from support import ONE_EPOCH_TWO_BATCHES, run, working_directory

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 300)
    samples = rng.normal(size=(300, 20)) + labels[:, None]
    options = ["--data=project.data.FileDataModule", "--model.network=project.networks.MLP", "--name=own"]
    with working_directory(tmp_path):
        if kind == "table":
            np.savetxt("own.csv", np.column_stack([samples * np.repeat([1e-3, 4000], 10), labels]), delimiter=",")
            options.append("--data.path=own.csv")
        else:
            np.savez("own.npz", samples=samples, labels=labels)
            options += ["--data.path=own.npz", "--data.kind=signal"]
        run("fit", *ONE_EPOCH_TWO_BATCHES, *options)
    run_dir = tmp_path / "runs/own/version_0"
    printed = execute(ROOT / "notebooks/02_run.ipynb", f"RUN_DIR = {str(run_dir)!r}", monkeypatch)
    assert printed[0] == first_line_of_the_run(run_dir), printed
