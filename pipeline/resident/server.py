"""The resident driver (see __init__.py): joins a cluster once, imports what a build
needs, then serves builds from its socket one at a time. Its job's workers outlive
each build (Ray keeps up to a CPU's worth of a job's idle workers per node), with the
stages, models and grammars they loaded.

Started by the client, in its own session and folder, with the client's import path:
    python -c <bootstrap> <sys.path as JSON> <address> <key>
Its stdout and stderr go to `<key>.log` between builds; during a build, to the client.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

from . import frames
from .place import Place, folder

IDLE_EXIT_S = float(os.environ.get("LEMUR_DATA_RESIDENT_IDLE_S", 600))
"""A resident driver with no build for this long exits (its workers with it)."""
LOG_KEEP_BYTES = 4 << 20
WATCH_EVERY_S = 1.0
"""How often it checks that its cluster's GCS still accepts connections."""


def main(argv: list[str]) -> None:
    address, key = argv
    # Ctrl-C in the client reaches a build here as SIGINT (`_watch_client`): handled as
    # Python does, also when the client's shell started it with SIGINT ignored (a
    # background job's `&`), which this process would otherwise inherit.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    where = Place(folder(dict(os.environ)), key)
    lock = open(where.lock, "a+")  # noqa: SIM115 -- held for the life of the process
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # another resident driver of this key runs or starts: the client finds it
    with contextlib.suppress(OSError):  # this key's log (the lock is ours): kept, with
        # the end of the driver before (how it ended), up to a size
        if os.fstat(sys.stdout.fileno()).st_size > LOG_KEEP_BYTES:
            os.ftruncate(sys.stdout.fileno(), 0)
    _log(f"resident driver {key} (pid {os.getpid()}) for {address}: starting")
    Resident(where, address).serve_forever()


def _import_report() -> None:
    from ..publish import run_docs

    run_docs.prepare()


def _log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}", file=sys.__stderr__, flush=True)


class Resident:
    def __init__(self, where: Place, address: str) -> None:
        from .. import heap

        self.where, self.address = where, address
        heap.hold()
        started = time.perf_counter()
        from .. import executor

        executor.stay_connected()
        executor.start(address)  # joined in a thread while this imports, as a build does
        from .. import cli  # noqa: F401 -- what a build imports, now
        from ..build import build  # noqa: F401
        from ..manifest import load_manifest  # noqa: F401
        from ..summary import print_summary  # noqa: F401

        executor.connect(address)
        heap.settle()
        heap.release()
        # The report's imports in a thread, as a build does, not before the first build.
        threading.Thread(target=_import_report, name="import-report", daemon=True).start()
        self.builds = 0
        self.gcs = _gcs_address()
        _log(f"joined {address} (GCS {self.gcs}) and imported in "
             f"{time.perf_counter() - started:.1f} s")
        self.connections: queue.Queue[tuple[socket.socket, dict[str, Any]] | None] = \
            queue.Queue()
        self.busy = threading.Event()
        self.quitting = threading.Event()
        self.listener = self._listen()
        for other in where.others():  # older code or environment, same cluster
            _ask_to_quit(other)

    def _listen(self) -> socket.socket:
        """Bound under a temporary name, then renamed: a client that connects finds a
        driver ready to serve (or, after a crash, a dead socket: it then starts one)."""
        temporary = os.path.join(self.where.folder, f".{self.where.key}.{os.getpid()}.sock")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(temporary)
        os.chmod(temporary, 0o600)
        listener.listen(8)
        os.replace(temporary, self.where.socket)
        self.inode = os.stat(self.where.socket).st_ino
        return listener

    def serve_forever(self) -> None:
        threading.Thread(target=self._accept, name="accept", daemon=True).start()
        threading.Thread(target=self._watch, name="watch-cluster", daemon=True).start()
        _log("serving")
        try:
            while not self.quitting.is_set():
                try:
                    item = self.connections.get(timeout=IDLE_EXIT_S)
                except queue.Empty:
                    _log(f"idle for {IDLE_EXIT_S:.0f} s: exiting")
                    break
                if item is None:
                    _log("asked to quit by a newer resident driver of this cluster")
                    break
                if not self._build(*item):
                    break
        finally:
            self._exit()

    def _accept(self) -> None:
        while True:
            conn, _ = self.listener.accept()
            conn.settimeout(None)  # not the process's default (a library may set one)
            if not _same_user(conn):
                conn.close()
                continue
            frame = frames.receive(conn)
            if frame is None:
                conn.close()
            elif frame[0] == frames.QUIT:
                conn.close()
                self.connections.put(None)
            elif frame[0] != frames.REQUEST:
                conn.close()
            elif self.busy.is_set() or self.quitting.is_set():
                with contextlib.suppress(OSError):
                    frames.send(conn, frames.BUSY)
                conn.close()
            else:
                self.busy.set()
                self.connections.put((conn, json.loads(frame[1])))

    def _watch(self) -> None:
        """Exit once the cluster is gone (`ray stop`): nothing could be served."""
        misses = 0
        while True:
            time.sleep(WATCH_EVERY_S)
            misses = 0 if _reachable(self.gcs) else misses + 1
            if misses >= 2 and not self.busy.is_set():
                _log(f"the cluster's GCS ({self.gcs}) is gone: exiting")
                self._remove_socket()
                os._exit(0)

    def _build(self, conn: socket.socket, request: dict[str, Any]) -> bool:
        """Serve one build; whether this driver can serve more."""
        self.builds += 1
        _log(f"build {self.builds}: {' '.join(request['argv'])} (client pid {request['pid']})")
        if not _reachable(self.gcs):
            with contextlib.suppress(OSError):
                frames.send(conn, frames.GONE)
            conn.close()
            _log("the cluster does not answer: exiting")
            return False
        outcome = _Outcome()
        watcher = threading.Thread(target=_watch_client, args=(conn, outcome),
                                   name="watch-client", daemon=True)
        started = time.perf_counter()
        with _as_client(conn, request):
            watcher.start()
            code = _run(request["argv"], outcome)
        took = time.perf_counter() - started
        if outcome.interrupted or outcome.crashed:
            # Leaving the cluster ends this job, and Ray stops its tasks still running,
            # before the client returns (ray.cancel of the running tasks instead crashed
            # Ray 2.60's driver: "Tried to complete task that was not pending").
            self._leave()
        with contextlib.suppress(OSError):
            frames.send(conn, frames.EXIT, str(code).encode())
        conn.close()
        self.busy.clear()
        _log(f"build {self.builds}: exit {code} in {took:.2f} s")
        # An interrupt may land anywhere (in Ray's client, an import, a library's
        # cleanup): a fresh driver is safer than one that was interrupted.
        return not (outcome.interrupted or outcome.crashed)

    def _leave(self) -> None:
        self.quitting.set()  # no build is taken from here on
        self._remove_socket()
        from .. import executor

        with contextlib.suppress(Exception):
            executor.leave()

    def _exit(self) -> None:
        self._leave()
        _log("exited")
        os._exit(0)

    def _remove_socket(self) -> None:
        with contextlib.suppress(OSError):
            if os.stat(self.where.socket).st_ino == self.inode:
                os.unlink(self.where.socket)


class _Outcome:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = True
        self.interrupted = False
        self.crashed = False


def _run(argv: list[str], outcome: _Outcome) -> int:
    from .. import cli

    try:
        try:
            code = cli.main(argv)
        finally:
            with outcome.lock:
                outcome.running = False
    except KeyboardInterrupt:  # after cli.main's own handling: nothing more to say
        outcome.interrupted = True
        return 130
    except BaseException:
        outcome.crashed = True
        traceback.print_exc()
        return 1
    return code


def _watch_client(conn: socket.socket, outcome: _Outcome) -> None:
    """Ctrl-C in the client, or the client gone (killed, its output closed): interrupt
    the build as Ctrl-C interrupts a build in its own process."""
    while True:
        frame = frames.receive(conn)
        if frame is not None and frame[0] != frames.INTERRUPT:
            continue
        with outcome.lock:
            if outcome.running:
                outcome.interrupted = True
                _log("the client " + ("interrupted the build" if frame else "is gone") +
                     ": interrupting it")
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        return


class _Relay(io.RawIOBase):
    """stdout or stderr of a build: each write is a frame to the client."""

    def __init__(self, conn: socket.socket, kind: bytes, tty: bool) -> None:
        self.conn, self.kind, self.tty = conn, kind, tty
        self.lock = threading.Lock()
        self.gone = False

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.tty

    def write(self, data: Any) -> int:
        data = bytes(data)
        with self.lock:
            if not self.gone:
                try:
                    frames.send(self.conn, self.kind, data)
                except OSError:  # the client is gone; its watcher interrupts the build
                    self.gone = True
        return len(data)


@contextlib.contextmanager
def _as_client(conn: socket.socket, request: dict[str, Any]) -> Iterator[None]:
    """The build's streams, folder and terminal are the client's, for its duration."""
    saved = sys.stdout, sys.stderr, os.getcwd()
    saved_env = {k: os.environ.get(k) for k in ("COLUMNS", "LINES")}
    sys.stdout = _stream(conn, frames.STDOUT, request["tty"]["stdout"])
    sys.stderr = _stream(conn, frames.STDERR, request["tty"]["stderr"])
    for name in saved_env:
        os.environ.pop(name, None)
    os.environ.update(request["env"])
    if request["size"] is not None and "COLUMNS" not in request["env"]:
        os.environ["COLUMNS"], os.environ["LINES"] = map(str, request["size"])
    try:
        os.chdir(request["cwd"])
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdout, sys.stderr = saved[0], saved[1]
        os.chdir(saved[2])
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _stream(conn: socket.socket, kind: bytes, tty: bool) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BufferedWriter(_Relay(conn, kind, tty)), encoding="utf-8",
                            errors="replace", line_buffering=True, write_through=True)


def _same_user(conn: socket.socket) -> bool:
    """The peer runs as this user (Linux's SO_PEERCRED: pid, uid, gid). Elsewhere the
    folder, closed to other users (place.folder), is the guard."""
    import struct

    if not hasattr(socket, "SO_PEERCRED"):
        return True
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return False
    return struct.unpack("3i", creds)[1] == os.getuid()


def _gcs_address() -> str:
    import ray

    return ray.get_runtime_context().gcs_address


def _reachable(address: str) -> bool:
    """The GCS accepts a connection (a refused one fails at once; Ray's own calls would
    retry for a minute)."""
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError:
        return False
    return True


def _ask_to_quit(path: str) -> None:
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(2)
        sock.connect(path)
        frames.send(sock, frames.QUIT)
