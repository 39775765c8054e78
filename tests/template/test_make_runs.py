"""`make runs` (python -m project runs) as the template wires it: project/__main__.py answers at once, without
importing torch or the model, and `make help` lists it. The table itself is the library's (lightning-runs/tests/
test_runs_table.py)."""

import subprocess
import sys

from support import ROOT


def test_python_m_project_runs_answers_without_importing_torch():
    as_typed = (  # `python -m project runs`, then what the process imported
        "import runpy, sys; sys.argv = ['project', 'runs']; runpy.run_module('project', run_name='__main__')\n"
        "print(sorted({'torch', 'lightning', 'project.cli', 'lightning_runs.tools.runs'} & set(sys.modules)))"
    )
    listed = subprocess.run([sys.executable, "-c", as_typed], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert listed.stdout.splitlines() == ["no runs in runs/", "['lightning_runs.tools.runs']"]


def test_make_help_lists_make_runs():
    help = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "make runs" in help
