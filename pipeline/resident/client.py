"""`lemur-data build --ray-address A`, handed to the resident driver of that cluster
(see __init__.py): start it if needed, send the build, print what it prints, exit with
its code. Imports nothing heavy (this is the whole `lemur-data` process of such a build).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from typing import Any

from . import frames
from .place import Place, Unavailable, place

START_TIMEOUT_S = 180.0
"""How long a new resident driver may take to join the cluster and import (a loaded
machine: ~5-10 s)."""


def build(argv: list[str], address: str) -> int | None:
    """The build's exit code, or None when no resident driver could take it: the caller
    then runs the build itself (what went wrong is said on stderr)."""
    unreachable = _unreachable(address)
    if unreachable:
        print(f"error: run failed: --ray-address {address}: {unreachable}", file=sys.stderr)
        return 1
    try:
        where = place(address)
    except Unavailable as error:
        _note(f"{error}")
        return None
    sock = _connect(where.socket)
    if sock is None:
        sock = _start(where, address)
        if sock is None:
            return None
    code = _serve(sock, argv)
    if code == _RETRY:  # its cluster was gone: a new driver, once
        sock = _start(where, address)
        code = _RETRY_HERE if sock is None else _serve(sock, argv)
    return None if code in (_RETRY, _RETRY_HERE) else code


_RETRY = -1000
"""The driver cannot serve (its cluster is gone): start a new one."""
_RETRY_HERE = -1001
"""Build in this process."""


def _unreachable(address: str) -> str | None:
    """Why a `host:port` address cannot be a running cluster (nothing listens there),
    or None. Joining such an address, Ray retries for minutes; a wrong port or a
    forgotten `ray start` is said at once instead. Other forms (`auto`, `ray://...`)
    are left to Ray, as is an address that RAY_ADDRESS overrides (Ray prefers it)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "://" in address:
        return None
    if os.environ.get("RAY_ADDRESS", address) != address:
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as error:
        return (f"nothing accepts connections there ({error.strerror or error}): is "
                "`ray start` running, and is that its GCS address and port?")
    return None


def _connect(path: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    except OSError as error:
        sock.close()
        _note(f"cannot reach {path}: {error.strerror or error}")
        return None
    return sock


def _start(where: Place, address: str) -> socket.socket | None:
    """Start a resident driver for `where` and connect to it once it listens (it binds
    its socket only once it has joined the cluster and imported a build's modules)."""
    import subprocess

    # Its import path is this process's, so that it runs the same lemur-data and
    # libraries (it starts in its own folder: a `-m` in the user's folder would put
    # that folder first on its path).
    path = [entry or os.getcwd() for entry in sys.path]
    bootstrap = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
                 "from lemur_data.pipeline.resident.server import main; main(sys.argv[2:])")
    with open(where.log, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", bootstrap, json.dumps(path), address, where.key],
            cwd=where.folder, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True)  # not in the terminal's group: Ctrl-C is the client's
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        sock = _connect(where.socket)
        if sock is not None:
            return sock
        if process.poll() is not None and process.returncode != 0:
            _note(f"the resident driver exited with {process.returncode} as it started "
                  f"(its log: {where.log}){_tail(where.log)}")
            return None
        time.sleep(0.02)
    _note(f"the resident driver did not start in {START_TIMEOUT_S:.0f} s (its log: "
          f"{where.log})")
    return None


def _serve(sock: socket.socket, argv: list[str]) -> int:
    """Send the build, relay its output; its exit code (or _RETRY)."""
    with sock:
        frames.send(sock, frames.REQUEST, json.dumps(_request(argv)).encode())
        previous = signal.getsignal(signal.SIGINT)
        interrupts = []

        def on_interrupt(signum: int, frame: Any) -> None:
            if interrupts:  # a second Ctrl-C: leave now (the driver sees the socket close)
                raise KeyboardInterrupt
            interrupts.append(signum)
            try:
                frames.send(sock, frames.INTERRUPT)
            except OSError:
                raise KeyboardInterrupt from None

        signal.signal(signal.SIGINT, on_interrupt)
        try:
            return _relay(sock)
        except KeyboardInterrupt:
            return 130
        finally:
            signal.signal(signal.SIGINT, previous)


def _relay(sock: socket.socket) -> int:
    outputs = {frames.STDOUT: sys.stdout, frames.STDERR: sys.stderr}
    while True:
        frame = frames.receive(sock)
        if frame is None:
            _note("the resident driver ended without an exit code", fallback=False)
            return 1
        kind, payload = frame
        if kind in outputs:
            stream = outputs[kind]
            try:
                stream.buffer.write(payload)
                stream.flush()
            except BrokenPipeError:  # `| head`: the driver sees the socket close
                return 141
        elif kind == frames.EXIT:
            return int(payload)
        elif kind == frames.BUSY:
            _note("another build is running in the resident driver of this cluster")
            return _RETRY_HERE
        elif kind == frames.GONE:
            return _RETRY


def _request(argv: list[str]) -> dict[str, Any]:
    size = None
    for stream in (sys.stdout, sys.stderr, sys.stdin):  # as rich measures its terminal
        try:
            size = os.get_terminal_size(stream.fileno())
            break
        except (AttributeError, ValueError, OSError):
            continue
    return {"argv": argv, "cwd": os.getcwd(), "pid": os.getpid(),
            "tty": {"stdout": _isatty(sys.stdout), "stderr": _isatty(sys.stderr)},
            "size": None if size is None else [size.columns, size.lines],
            "env": {k: os.environ[k] for k in ("COLUMNS", "LINES") if k in os.environ}}


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _tail(path: str, lines: int = 5) -> str:
    try:
        with open(path, errors="replace") as log:
            text = log.read().strip().splitlines()[-lines:]
    except OSError:
        return ""
    return "".join(f"\n  {line}" for line in text)


def _note(message: str, fallback: bool = True) -> None:
    then = "; building in this process" if fallback else ""
    print(f"note: resident driver: {message}{then}", file=sys.stderr)
