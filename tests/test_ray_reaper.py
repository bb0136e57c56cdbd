"""The reaper that stops a killed driver's leftover processes (issue 20), without Ray.

A stand-in driver starts one process of its own and then, where `connect` calls
`ray.init`, one that starts a child ignoring SIGTERM (like a Ray agent stuck in its
60 s call to a dead GCS), and is killed right then, with nothing after it run (issue
32: the reaper used to start only once `ray.init` had returned). The end-to-end
cases, a real `lemur-data build` SIGKILLed, are in test_cli.py and test_local_ray.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from lemur_data.pipeline import ray_reaper

DRIVER = """
import os, subprocess, sys, time
from lemur_data.pipeline import ray_reaper

own = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
ray_reaper.start()  # where `connect` calls it: before ray.init starts anything
raylet = subprocess.Popen([sys.executable, "-c", '''
import subprocess, sys, time
agent = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print(flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
agent.stdout.readline()  # its SIGTERM handler is set
print(agent.pid, flush=True)
time.sleep(600)
'''], stdout=subprocess.PIPE, text=True)
agent = int(raylet.stdout.readline())
# killed now, as if inside ray.init: nothing after the start of Ray's processes ran
print(own.pid, raylet.pid, agent, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    return ray_reaper._stat(pid) is not None


def test_a_killed_driver_s_ray_like_processes_are_stopped_and_nothing_else() -> None:
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        pids = [int(p) for p in driver.stdout.readline().split()]
        own, raylet, agent = pids
        assert all(_alive(p) for p in pids)
        assert set(ray_reaper.descendants(driver.pid)) >= {own, raylet, agent}
        driver.kill()
        driver.wait()
        killed = time.monotonic()
        while (_alive(raylet) or _alive(agent)) and time.monotonic() - killed < 30:
            time.sleep(0.05)
        took = time.monotonic() - killed
        assert not _alive(raylet) and not _alive(agent)
        # the agent ignored SIGTERM: it waited out the grace period, then got SIGKILL
        assert took >= ray_reaper.GRACE_S
        assert _alive(own)  # the driver's own process, started before Ray, is left alone
    finally:
        driver.kill()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_reused_pid_is_never_signalled() -> None:
    # this very process, listed with another start time: a PID reused since the look
    ours = ray_reaper.descendants(os.getppid()).get(os.getpid())
    assert ours is not None
    ray_reaper.stop({os.getpid(): ours + 1}, grace_s=0.1)
    assert _alive(os.getpid())
