"""Whether a recorded process still lives (lightning_runs/processes.py), as psutil tells it on Linux and macOS alike:
the runs table and a journal's workers judge a killed process by it. The same code runs on both; these tests run on
whichever the suite runs on."""

import json
import subprocess
import sys

import psutil
from tiny_runs import wait_for

from lightning_runs import processes

RECORD_AND_WAIT = "import json, time; from lightning_runs import processes; print(json.dumps(processes.this_process()), flush=True); time.sleep(60)"  # noqa: E501


def test_a_process_recorded_by_another_process_lives_while_it_runs_and_is_dead_once_killed():
    child = subprocess.Popen([sys.executable, "-c", RECORD_AND_WAIT], stdout=subprocess.PIPE, text=True)
    try:
        recorded = json.loads(child.stdout.readline())
        assert recorded["pid"] == child.pid and not processes.is_dead(recorded), "its own record, read by another"
    finally:
        child.kill()
    # Killed, not yet reaped: a zombie, which counts as gone.
    wait_for(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, 10, "the killed child, a zombie")
    assert processes.started(child.pid) is None and processes.is_dead(recorded)
    child.wait()
    assert processes.is_dead(recorded), "reaped"


def test_a_process_of_before_the_machine_restarted_is_dead_and_an_older_record_or_another_machines_cannot_be_told():
    alive = processes.this_process()
    assert not processes.is_dead(alive)
    assert processes.is_dead({**alive, "boot": alive["boot"] - 3600})
    assert not processes.is_dead({**alive, "boot": "0b5e-boot-id", "started": 123456}), "an older record: not judged"
    assert not processes.is_dead({**alive, "host": "another-machine", "pid": 2**22 + 1})
    assert processes.is_dead({**alive, "pid": "not a pid"}) and processes.started(None) is None
