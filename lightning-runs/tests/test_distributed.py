"""Gathering rows of unequal count from every rank: what the prediction writer relies on under DDP."""

import json
import os
import subprocess
import sys

import pytest
import torch

from lightning_runs.distributed import gather_rows

# Rank r holds 3 - r rows of (2,) : unequal counts, as the shards of an odd-sized set.
GATHER = """
import json
import sys

import torch
import torch.distributed as dist

from lightning_runs.distributed import gather_rows

dist.init_process_group("gloo")
rank = dist.get_rank()
rows = torch.arange(2 * (3 - rank), dtype=torch.float64).view(-1, 2) + 100 * rank
gathered = gather_rows(rows)
report = {"rank": rank, "dtypes": [str(g.dtype) for g in gathered], "rows": [g.tolist() for g in gathered]}
# One write of the whole line: both ranks share the pipe, and print's two writes (text, newline) could interleave.
sys.stdout.write(json.dumps(report) + "\\n")
sys.stdout.flush()
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_every_rank_gets_every_ranks_rows_in_rank_order_each_with_its_own_count(tmp_path):
    script = tmp_path / "gather.py"
    script.write_text(GATHER)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    reports = sorted((json.loads(line) for line in result.stdout.splitlines()), key=lambda report: report["rank"])
    expected = [[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [[100.0, 101.0], [102.0, 103.0]]]  # no padding row left
    assert reports == [{"rank": r, "dtypes": ["torch.float64"] * 2, "rows": expected} for r in (0, 1)]


def test_one_process_gathers_its_own_rows_alone():
    rows = torch.randn(5, 3)
    (gathered,) = gather_rows(rows)
    assert gathered is rows
