"""Reading a file the user named (the manifest, a tokenizer, a benchmark file): a regular
file only, never more than a size bound.

Opening a FIFO blocks until a writer comes, and `/dev/zero` or `/dev/urandom` never end:
`validate -m /dev/zero` once grew to 23.8 GB before it was killed. So a local path is
opened with O_NONBLOCK (a FIFO opens at once instead of waiting), checked with fstat on
the open descriptor (no window between the check and the read), and read through a
bounded `read(limit + 1)`: a file that grows after the check is refused, not read whole.
A remote (fsspec) path cannot be a device; it gets the same bounded read.
"""

from __future__ import annotations

import os
import stat

from fsspec.core import url_to_fs

MiB = 1 << 20

_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class UserFileError(OSError):
    """A user-named file that is not a regular file or is larger than its bound."""


def describe_kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def read_user_file(path: str | os.PathLike[str], *, what: str, max_bytes: int) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `max_bytes`.

    `what` names the file in errors (`manifest`, `tokenizer.file`). Raises
    FileNotFoundError / IsADirectoryError as open() would, UserFileError otherwise."""
    name = os.fspath(path)
    if "://" in name:
        fs, local = url_to_fs(name)
        with fs.open(local, "rb") as handle:
            return _bounded(handle.read(max_bytes + 1), name, what, max_bytes)
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory", name)
        if not stat.S_ISREG(info.st_mode):
            raise UserFileError(f"{name}: the {what} is {describe_kind(info.st_mode)}, "
                                "not a regular file; give a file")
        if info.st_size > max_bytes:
            raise UserFileError(_too_large(name, what, max_bytes, info.st_size))
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 8 * MiB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return _bounded(b"".join(chunks), name, what, max_bytes)
    finally:
        os.close(fd)


def _bounded(data: bytes, name: str, what: str, max_bytes: int) -> bytes:
    if len(data) > max_bytes:
        raise UserFileError(_too_large(name, what, max_bytes, None))
    return data


def _too_large(name: str, what: str, max_bytes: int, size: int | None) -> str:
    has = f"{size} bytes" if size is not None else "more (it grew while being read)"
    return f"{name}: the {what} is larger than {max_bytes} bytes ({has}); not read"
