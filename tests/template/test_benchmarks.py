"""The benchmarks read the project's resolved config as the CLI prints it: `make bench` broke unnoticed once the
model was printed by class path. Each baseline runs one epoch of the default recipe here; the sweep benchmark checks
the study it timed holds exactly the trials asked."""

import json
import sys
from pathlib import Path

import pytest

from benchmarks.common import DEFAULT, resolve, timed


@pytest.mark.slow  # ~25 s: the resolved config, then two one-epoch fits in processes of their own
@pytest.mark.parametrize("baseline", ["benchmarks.plain_loop", "benchmarks.plain_lightning"])
def test_each_baseline_trains_the_resolved_default_recipe(baseline, tmp_path):
    resolved = resolve([DEFAULT], tmp_path / "resolved.yaml", "--trainer.max_epochs=1")
    out = timed([sys.executable, "-m", baseline, str(resolved)], tmp_path)[2]
    result = json.loads(out.strip().splitlines()[-1])
    assert result["fit_seconds"] > 0 and 0 < result["val_acc"] <= 1


@pytest.mark.slow  # ~40 s: two sweep workers, two trials of two epochs of five batches
def test_the_sweep_workers_benchmark_times_workers_that_finish_exactly_the_trials_asked(tmp_path):
    out = timed(
        [sys.executable, "-m", "benchmarks.sweep_workers", "--workers", "2", "--trials", "2", "--storages", "journal"],
        tmp_path,
    )[2]
    header, _, row = out.strip().splitlines()[-3:]
    assert header == "| Workers | journal |"
    workers, seconds = row.strip("| ").split(" | ")
    assert workers == "2" and float(seconds) > 0


def test_timed_takes_stderr_through_a_pipe_without_blocking_and_names_it_on_failure(tmp_path):
    noisy = "import sys; sys.stderr.write('x' * 1_000_000); print('done')"  # far over a pipe's 64 KB buffer
    assert timed([sys.executable, "-c", noisy], tmp_path)[2] == "done\n"
    with pytest.raises(RuntimeError, match="the reason it failed"):
        timed([sys.executable, "-c", "import sys; sys.exit('the reason it failed')"], tmp_path)


@pytest.mark.slow  # ~50 s: four one-epoch fits (a warm-up, the default before and after, one part switched off)
def test_the_parts_benchmark_times_the_default_and_each_part_switched_off(tmp_path):
    out = timed(
        [sys.executable, "-m", "benchmarks.parts", "--epochs", "1", "--rounds", "1", "--only", "gradient_check"],
        tmp_path,
    )[2]
    (row,) = [line for line in out.splitlines() if line.startswith("| gradient_check (--gradient_check null) |")]
    assert len(row.split(" | ")) == 5
    assert "cores; load average" in out
    raw = json.loads(Path(out.strip().splitlines()[-1].removeprefix("raw numbers: ")).read_text())
    (default,), (switched_off,) = raw["default"], raw["gradient_check (--gradient_check null)"]
    for fit in (default, switched_off):
        assert 0 < fit["fit_seconds"] < fit["wall"] and fit["fit_cpu"] > 0


@pytest.mark.slow  # ~60 s: a one-epoch fit, then two pairs of evaluations (a warm-up and one round)
def test_the_evaluation_benchmark_times_the_projects_test_against_a_plain_trainer_test(tmp_path):
    out = timed([sys.executable, "-m", "benchmarks.evaluation", "--rounds", "1", "--epochs", "1"], tmp_path)[2]
    raw = json.loads(out.strip().splitlines()[-1])
    assert len(raw["ratio"]) == 1 and raw["project"][0] > 0 and raw["plain"][0] > 0
    assert raw["ratio"][0] == pytest.approx(raw["project"][0] / raw["plain"][0])
