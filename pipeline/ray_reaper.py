"""Stops what is left of a local Ray instance after the driver that started it is killed.

Ray ties its GCS server, raylet and workers to the driver (the kernel kills them with
it), but the raylet's two agents, `ray::DashboardAgent` and `ray::RuntimeEnvAgent`,
outlive it: about 1.5 s after the raylet dies they notice, then report the death to
the GCS, which died too, and wait out the 60 s timeout that Ray writes into that call
(`ray._private.utils.publish_error_to_driver`) before exiting. No Ray setting shortens
it: `RAY_gcs_rpc_server_reconnect_timeout_s=5` only makes them log "unavailable" every
5 s while they keep waiting (measured with py-spy on Ray 2.60).

So `lemur-data build`, when it starts its own Ray, starts this small process first,
before `ray.init`, so that a kill while Ray is starting leaves nothing behind either.
It is given the driver's children of that moment (processes Ray did not start) and
blocks on a pipe from the driver, which closes when the driver exits, however it
exits. Meanwhile it keeps a list of the driver's new children (GCS server, raylet, log
monitor) and all their descendants (agents, workers), found through /proc with start
times so a reused PID is never taken for one of them: every 0.1 s while `ray.init`
runs, every 5 s once the driver says it returned (after that, new children of the
driver are not Ray's and are left alone). The driver also marks its environment with
a token only this reaper knows (`LEMUR_DATA_RAY_OWNER`), which every process Ray
starts inherits: a process forked moments before the kill, too new for the list, is
found by it (not reliably later: `setproctitle`, which names Ray's agents and
workers, may overwrite what /proc shows of the environment). When the pipe closes,
after a normal end Ray has stopped itself and nothing listed is alive; after a
SIGKILL the reaper sends SIGTERM to what is left, then SIGKILL after a grace period,
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
import uuid
from pathlib import Path

PROC = Path("/proc")
# How often the list is refreshed while `ray.init` runs (agents are listed before the
# raylet that started them can die), and after it returned (later looks add workers,
# which Ray stops by itself anyway). Each look reads /proc once (a few ms).
STARTING_S = 0.1
REFRESH_S = 5.0
# Time SIGTERMed processes get to exit before SIGKILL. An agent stuck in the GCS call
# above runs its Python signal handler only when the call returns, so it needs SIGKILL.
GRACE_S = 2.0

# The environment variable that marks the processes of a local Ray this driver started.
MARK = "LEMUR_DATA_RAY_OWNER"
# How many rounds of SIGTERM/SIGKILL a reaper makes while marked processes are left (a
# dying raylet may still be starting a worker when the first round looks).
ROUNDS = 5

# One per Ray instance this process started; a reaper's pipe must stay open while the
# driver lives, so its Popen object is kept here.
_reapers: list[subprocess.Popen[bytes]] = []


def start() -> None:
    """Start a reaper of what this process starts from now on (a local Ray), for when
    it is gone, and mark its environment; on Linux only (it reads /proc). Call it before
    `ray.init`, and `started()` once it returned."""
    if not PROC.is_dir():
        return
    token = f"{os.getpid()}-{uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if k != MARK}  # the reaper carries no mark
    before = [f"{pid}:{started}" for pid, started in children(os.getpid()).items()]
    # The reaper sees end-of-file on its stdin when this process, the only holder of the
    # pipe's write end, is gone.
    _reapers.append(subprocess.Popen(
        [sys.executable, "-m", __name__, token, str(os.getpid()), *before], env=env,
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    os.environ[MARK] = token


def started() -> None:
    """`ray.init` returned: the reapers take no more new children of this process."""
    for reaper in _reapers:
        with contextlib.suppress(OSError):
            assert reaper.stdin is not None
            reaper.stdin.write(b"r")
            reaper.stdin.flush()


def marked(token: str) -> dict[int, int]:
    """{pid: start time} of the live processes whose environment holds the token."""
    needle = f"{MARK}={token}".encode()
    found: dict[int, int] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # another user's process, or gone meanwhile
            continue
        if needle in environ.split(b"\0") and (stat := _stat(int(entry.name))) is not None:
            found[int(entry.name)] = stat[1]
    return found


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


def main(token: str, driver: int, before: dict[int, int]) -> None:
    # Ctrl-C and a closed terminal reach the whole process group: the driver then stops
    # Ray itself, or dies, and either way this process still has its job to finish.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    roots: dict[int, int] = {}
    seen: dict[int, int] = {}
    ready = False
    while True:
        tree = _tree()
        if not ready:  # the driver's new children: what ray.init started
            roots |= {pid: t for pid, t in tree.get(driver, {}).items()
                      if pid != os.getpid() and before.get(pid) != t}
        seen = _alive(seen) | _alive(roots)
        for root in list(seen):
            seen |= descendants(root, tree)
        ready_now, _, _ = select.select([sys.stdin], [], [], REFRESH_S if ready else
                                        STARTING_S)
        if ready_now:
            data = os.read(sys.stdin.fileno(), 4096)
            if not data:
                break  # the driver is gone
            ready = True
    for _ in range(ROUNDS):
        left = _alive(seen) | marked(token)
        if not left:
            break
        stop(left)
        seen = {}


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]),
         {int(pid): int(t) for pid, t in (a.split(":") for a in sys.argv[3:])})
