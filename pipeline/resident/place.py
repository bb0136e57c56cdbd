"""Where a resident driver lives, and which builds it may serve: its key.

A key has two parts, `<cluster>-<code>`: the hash of the cluster address as given, and
the hash of what decides a build's behaviour in its driver: every file of lemur-data
(path, size, mtime), the Python, its import path (and the mtime of its site-packages
folders, which an install changes) and the environment (credentials, `LEMUR_DATA_*`, `RAY_*`...),
without the few variables a shell changes on its own. A resident driver only serves
builds of its own key; a new one tells the older ones of the same cluster to exit.

Computed by every `lemur-data build --ray-address` before anything heavy is imported:
stat calls only (~300 files, a few ms)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys

# Plain strings and os.path, no pathlib or dataclasses: their imports (~35 ms) were a
# tenth of a served build's fixed cost.

DIR_ENV = "LEMUR_DATA_RESIDENT_DIR"
"""The folder of the resident drivers' sockets, locks and logs (default: $XDG_RUNTIME_DIR/
lemur-data, else /tmp/lemur-data-<uid>)."""

# What a shell or terminal sets differently from one command to the next, without any
# bearing on a build (COLUMNS and LINES are passed with each build, as its terminal).
VOLATILE_ENV = frozenset({"_", "PWD", "OLDPWD", "SHLVL", "COLUMNS", "LINES"})

PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
"""pipeline/; stages/ and filters/ are found beside it (their own __file__ would
import them)."""


class Unavailable(Exception):
    """No resident driver can be used here; the build runs in its own process."""


class Place:
    """A resident driver's files: `<folder>/<key>.sock`, `.lock` and `.log`."""

    def __init__(self, folder: str, key: str) -> None:
        self.folder, self.key = folder, key
        self.cluster = key.split("-", 1)[0]
        self.socket, self.lock, self.log = (os.path.join(folder, f"{key}.{suffix}")
                                            for suffix in ("sock", "lock", "log"))

    def others(self) -> list[str]:
        """The sockets of this cluster's other resident drivers (other code or env)."""
        return sorted(os.path.join(self.folder, name) for name in os.listdir(self.folder)
                      if name.startswith(f"{self.cluster}-") and name.endswith(".sock")
                      and os.path.join(self.folder, name) != self.socket)


def place(address: str, environ: dict[str, str] | None = None) -> Place:
    environ = dict(os.environ) if environ is None else environ
    return Place(folder(environ), key(address, environ))


def key(address: str, environ: dict[str, str], roots: list[str] | None = None) -> str:
    cluster = hashlib.sha256(address.encode()).hexdigest()[:12]
    code = hashlib.sha256()
    for line in code_stamp(roots if roots is not None else package_roots()):
        code.update(line.encode("utf-8", "surrogateescape") + b"\n")
    for name in sorted(set(environ) - VOLATILE_ENV):
        code.update(f"env {name}={environ[name]}\n".encode("utf-8", "surrogateescape"))
    return f"{cluster}-{code.hexdigest()[:20]}"


def package_roots() -> list[str]:
    """lemur-data's three folders, as imported (a checkout, an install, or symlinks)."""
    parent = os.path.dirname(PACKAGE)
    return [os.path.realpath(os.path.join(parent, name))
            for name in ("pipeline", "stages", "filters")]


def code_stamp(roots: list[str]) -> list[str]:
    """What identifies the code a driver runs, one line per item."""
    lines = [f"python {sys.version} {sys.executable}"]
    for entry in sys.path:
        # an install or upgrade renames a package's dist-info folder in site-packages;
        # any other folder on the path (the working folder under `python -m`) changes
        # with every file written there, so only its name counts
        stamp = "-"
        if os.path.basename(entry) in ("site-packages", "dist-packages"):
            with contextlib.suppress(OSError):
                stamp = str(os.stat(entry).st_mtime_ns)
        lines.append(f"path {entry} {stamp}")
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                path = os.path.join(folder, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                lines.append(f"file {path} {info.st_size} {info.st_mtime_ns}")
    return lines


def folder(environ: dict[str, str]) -> str:
    """The resident drivers' folder, made if missing: owned by this user and closed to
    others (its sockets run builds as this user). Unavailable otherwise."""
    uid = os.getuid()
    given = environ.get(DIR_ENV)
    if given:
        path = given
    elif environ.get("XDG_RUNTIME_DIR"):
        path = os.path.join(environ["XDG_RUNTIME_DIR"], "lemur-data")
    else:
        path = f"/tmp/lemur-data-{uid}"
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError as error:
        raise Unavailable(f"cannot make {path}: {error.strerror or error}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077:
        raise Unavailable(f"{path} is not a folder of this user's closed to others "
                          f"(mode {stat.filemode(info.st_mode)}, uid {info.st_uid}); "
                          f"set {DIR_ENV} to another folder")
    # A Unix socket's path holds at most 107 bytes; a driver binds `.<key>.<pid>.sock`
    # (up to 47) in it first.
    if len(path) > 56:
        raise Unavailable(f"{path}: too long a path for a Unix socket; set {DIR_ENV} to a "
                          "shorter one")
    return path
