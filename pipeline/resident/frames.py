"""What the client and the resident driver say to each other over their Unix socket:
frames of one kind byte, a 4-byte big-endian length and the payload.

Imports nothing heavy: the client is every `lemur-data build --ray-address` process."""

from __future__ import annotations

import socket
import struct

REQUEST = b"R"
"""client -> driver: the build (JSON: argv, cwd, terminal)."""
INTERRUPT = b"I"
"""client -> driver: Ctrl-C."""
QUIT = b"Q"
"""a newer driver of the same cluster -> an older one: exit once idle."""
STDOUT = b"O"
STDERR = b"E"
"""driver -> client: what the build wrote to stdout or stderr."""
EXIT = b"X"
"""driver -> client: the build's exit code (ASCII); the last frame."""
BUSY = b"B"
"""driver -> client: another build is running here (the client builds itself)."""
GONE = b"G"
"""driver -> client: this driver cannot serve (its cluster is gone); it exits."""

_HEADER = struct.Struct(">cI")


def send(sock: socket.socket, kind: bytes, payload: bytes = b"") -> None:
    sock.sendall(_HEADER.pack(kind, len(payload)) + payload)


def receive(sock: socket.socket) -> tuple[bytes, bytes] | None:
    """The next frame, or None once the other side has closed (or reset) the socket."""
    header = _exactly(sock, _HEADER.size)
    if header is None:
        return None
    kind, size = _HEADER.unpack(header)
    payload = _exactly(sock, size) if size else b""
    return None if payload is None else (kind, payload)


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = []
    while size:
        try:
            chunk = sock.recv(min(size, 1 << 20))
        except OSError:  # reset by a killed peer: as closed
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
