"""Stops what is left of a local Ray instance after the driver that started it is killed.

Ray ties its GCS server, raylet and workers to the driver (the kernel kills them with
it), but the raylet's two agents, `ray::DashboardAgent` and `ray::RuntimeEnvAgent`,
outlive it: about 1.5 s after the raylet dies they notice, then report the death to
the GCS, which died too, and wait out the 60 s timeout that Ray writes into that call
(`ray._private.utils.publish_error_to_driver`) before exiting. No Ray setting shortens
it: `RAY_gcs_rpc_server_reconnect_timeout_s=5` only makes them log "unavailable" every
5 s while they keep waiting (measured with py-spy on Ray 2.60).

So `lemur-data build`, when it starts its own Ray, starts this small process too. It
is given the processes `ray.init` started (the driver's new children: GCS server,
raylet, log monitor), keeps a list of them and their descendants (agents, workers;
found through /proc, with start times so a reused PID is never taken for one of them)
and blocks on a pipe from the driver. Processes the driver started otherwise are not
on the list. The pipe closes when the driver exits, however it exits: after a normal
end Ray has stopped itself and the list holds nothing alive; after a SIGKILL the
reaper sends SIGTERM to what is left, then SIGKILL after a grace period, which is
what Ray's own reaper does on systems without kernel fate-sharing.
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
# How often the list is refreshed. Ray's agents start with the raylet, before `ray.init`
# returns, so the first look finds them; later looks add workers, which Ray stops by
# itself anyway. Each look reads /proc once (a few ms).
REFRESH_S = 5.0
# Time SIGTERMed processes get to exit before SIGKILL. An agent stuck in the GCS call
# above runs its Python signal handler only when the call returns, so it needs SIGKILL.
GRACE_S = 2.0

# One per Ray instance this process started; a reaper's pipe must stay open while the
# driver lives, so its Popen object is kept here.
_reapers: list[subprocess.Popen[bytes]] = []


def start(roots: dict[int, int]) -> None:
    """Start a reaper of `roots` ({pid: start time}) and their descendants, for when this
    process is gone; on Linux only (it reads /proc)."""
    if not PROC.is_dir() or not roots:
        return
    # The reaper sees end-of-file on its stdin when this process, the only holder of the
    # pipe's write end, is gone.
    _reapers.append(subprocess.Popen(
        [sys.executable, "-m", __name__, *(f"{pid}:{started}" for pid, started in roots.items())],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


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


def _tree() -> dict[int, dict[int, int]]:
    """{parent pid: {child pid: start time}} of every live process."""
    tree: dict[int, dict[int, int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            tree.setdefault(stat[0], {})[int(entry.name)] = stat[1]
    return tree


def children(pid: int) -> dict[int, int]:
    """{pid: start time} of the live children of `pid`."""
    return _tree().get(pid, {})


def descendants(root: int, tree: dict[int, dict[int, int]] | None = None) -> dict[int, int]:
    """{pid: start time} of every live descendant of `root`."""
    tree = _tree() if tree is None else tree
    found: dict[int, int] = {}
    stack = [root]
    while stack:
        for pid, started in tree.get(stack.pop(), {}).items():
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


def _watched(roots: dict[int, int]) -> dict[int, int]:
    """The roots still alive and all their descendants."""
    tree = _tree()
    alive = _alive(roots)
    found = dict(alive)
    for root in alive:
        found |= descendants(root, tree)
    return found


def main(roots: dict[int, int]) -> None:
    # Ctrl-C and a closed terminal reach the whole process group: the driver then stops
    # Ray itself, or dies, and either way this process still has its job to finish.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    seen: dict[int, int] = {}
    while True:
        seen = _alive(seen) | _watched(roots)
        ready, _, _ = select.select([sys.stdin], [], [], REFRESH_S)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break  # the driver is gone
    stop(seen)


if __name__ == "__main__":
    main({int(pid): int(started) for pid, started in (a.split(":") for a in sys.argv[1:])})
