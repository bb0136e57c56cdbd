"""Stops what is left of a local Ray instance after the driver that started it is killed.

Ray ties its GCS server, raylet and workers to the driver (the kernel kills them with
it), but the raylet's two agents, `ray::DashboardAgent` and `ray::RuntimeEnvAgent`,
outlive it: about 1.5 s after the raylet dies they notice, then report the death to
the GCS, which died too, and wait out the 60 s timeout that Ray writes into that call
(`ray._private.utils.publish_error_to_driver`) before exiting. No Ray setting shortens
it: `RAY_gcs_rpc_server_reconnect_timeout_s=5` only makes them log "unavailable" every
5 s while they keep waiting (measured with py-spy on Ray 2.60).

So `lemur-data build`, when it starts its own Ray, starts this small process too. It
keeps a list of the driver's descendants (the Ray processes it started, found through
/proc, with their start times so a reused PID is never taken for one of them) and
blocks on a pipe from the driver. The pipe closes when the driver exits, however it
exits: after a normal end Ray has stopped itself and the list holds nothing alive;
after a SIGKILL it sends SIGTERM to what is left, then SIGKILL after a grace period,
which is what Ray's own reaper does on systems without kernel fate-sharing.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

PROC = Path("/proc")
# How often the list of the driver's descendants is refreshed. Ray's agents start with
# the raylet, before `ray.init` returns, so the first look finds them; later looks only
# add workers, which Ray stops by itself. Each look reads /proc once (a few ms).
REFRESH_S = 5.0
# Time SIGTERMed processes get to exit before SIGKILL. An agent stuck in the GCS call
# above runs its Python signal handler only when the call returns, so it needs SIGKILL.
GRACE_S = 2.0

_reaper: subprocess.Popen[bytes] | None = None


def start() -> None:
    """Start the reaper for this (driver) process, once; Linux only (it reads /proc)."""
    global _reaper
    if (_reaper is not None and _reaper.poll() is None) or not PROC.is_dir():
        return
    # The driver keeps the pipe's write end for its whole life (the Popen object lives in
    # this module); the reaper sees end-of-file when the driver is gone.
    _reaper = subprocess.Popen([sys.executable, "-m", __name__, str(os.getpid())],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process, or None."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the name may hold spaces and ')'
    if fields[0] == "Z":
        return None  # a zombie has exited already
    return int(fields[1]), int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """{pid: start time} of every live descendant of `root`."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            children.setdefault(stat[0], []).append((int(entry.name), stat[1]))
    found: dict[int, int] = {}
    stack = [root]
    while stack:
        for pid, started in children.get(stack.pop(), []):
            if pid not in found:
                found[pid] = started
                stack.append(pid)
    return found


def _alive(processes: dict[int, int]) -> dict[int, int]:
    return {pid: started for pid, started in processes.items()
            if (stat := _stat(pid)) is not None and stat[1] == started}


def _signal(processes: dict[int, int], signum: int) -> None:
    for pid in _alive(processes):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def stop(processes: dict[int, int], grace_s: float = GRACE_S) -> None:
    """SIGTERM the processes still alive, then SIGKILL those alive after `grace_s`."""
    _signal(processes, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while _alive(processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal(processes, signal.SIGKILL)


def main(driver: int) -> None:
    # Ctrl-C and a closed terminal reach the whole process group: the driver then stops
    # Ray itself, or dies, and either way this process still has its job to finish.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    me = os.getpid()
    seen: dict[int, int] = {}
    while True:
        seen = _alive(seen) | {p: s for p, s in descendants(driver).items() if p != me}
        ready, _, _ = select.select([sys.stdin], [], [], REFRESH_S)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break  # the driver is gone
    stop(seen)


if __name__ == "__main__":
    main(int(sys.argv[1]))
