"""The reaper that stops a killed driver's leftover processes (issue 20), without Ray.

A stand-in driver starts two real processes: one that exits on SIGTERM and one that
ignores it, like a Ray agent stuck in its 60 s call to a dead GCS. The end-to-end
case (a real `lemur-data build` SIGKILLed) is in test_cli.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from lemur_data.pipeline import ray_reaper

REPO = Path(__file__).resolve().parents[1]
DRIVER = """
import signal, subprocess, sys, time
polite = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
stubborn = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(600)"], stdout=subprocess.PIPE, text=True)
stubborn.stdout.readline()  # its SIGTERM handler is set
print(polite.pid, stubborn.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    return ray_reaper._stat(pid) is not None


def test_closing_the_pipe_stops_every_descendant_but_not_the_driver() -> None:
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        pids = [int(p) for p in driver.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        assert set(ray_reaper.descendants(driver.pid)) == set(pids)
        reaper = subprocess.Popen([sys.executable, "-m", "lemur_data.pipeline.ray_reaper",
                                   str(driver.pid)], cwd=REPO, stdin=subprocess.PIPE)
        started = time.monotonic()
        reaper.stdin.close()  # what the driver's death does
        assert reaper.wait(timeout=30) == 0
        took = time.monotonic() - started
        assert not any(_alive(p) for p in pids)
        assert driver.poll() is None  # only what the driver started is stopped
        # the stubborn one waited out the grace period, then got SIGKILL
        assert took >= ray_reaper.GRACE_S
    finally:
        driver.kill()
        driver.wait()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, 9)


def test_a_reused_pid_is_never_signalled() -> None:
    # this very process, listed with another start time: a PID reused since the look
    ours = ray_reaper.descendants(os.getppid()).get(os.getpid())
    assert ours is not None
    ray_reaper.stop({os.getpid(): ours + 1}, grace_s=0.1)
    assert _alive(os.getpid())
