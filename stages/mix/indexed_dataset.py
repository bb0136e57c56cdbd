"""Megatron-core indexed datasets (`.bin` + `.idx`), written streaming and atomically.

The `.bin` is the token ids back to back; the `.idx` is megatron-core's
IndexedDataset index: `MMIDIDX\\x00\\x00`, version 1 (u64), dtype code (u8),
sequence count (u64), document count (u64), sequence lengths (i32), sequence
byte pointers (i64), document indices (i64: 0, then the end sequence of each
document). One sequence per document, as preprocess_data.py writes without
sentence splitting. `ShardedWriter` rolls over to a new shard before a
sequence would push the `.bin` past `max_shard_bytes`, so shards split only
at sequence boundaries.
"""

from __future__ import annotations

import contextlib
import os
import struct
import uuid
from dataclasses import dataclass, field
from typing import Any, BinaryIO, NoReturn

import numpy as np
from fsspec.implementations.local import LocalFileSystem

from .. import storage

INDEX_HEADER = b"MMIDIDX\x00\x00"
# megatron.core.datasets.indexed_dataset.DType
DTYPE_CODES = {np.dtype(np.uint8): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3,
               np.dtype(np.int32): 4, np.dtype(np.int64): 5, np.dtype(np.float64): 6,
               np.dtype(np.float32): 7, np.dtype(np.uint16): 8}


def index_bytes(dtype: np.dtype, sequence_lengths: np.ndarray) -> bytes:
    """The `.idx` of a dataset whose every sequence is one document."""
    lengths = np.asarray(sequence_lengths, np.int32)
    pointers = np.zeros(len(lengths), np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1].astype(np.int64) * np.dtype(dtype).itemsize, out=pointers[1:])
    documents = np.arange(len(lengths) + 1, dtype=np.int64)
    return b"".join([
        INDEX_HEADER,
        struct.pack("<Q", 1),
        struct.pack("<B", DTYPE_CODES[np.dtype(dtype)]),
        struct.pack("<Q", len(lengths)),
        struct.pack("<Q", len(documents)),
        lengths.tobytes(order="C"),
        pointers.tobytes(order="C"),
        documents.tobytes(order="C"),
    ])


class AtomicFile:
    """A file written in pieces under a temporary name, renamed into place on commit."""

    def __init__(self, path: str) -> None:
        self.fs, self.path = storage.filesystem(path)
        parent, name = self.path.rsplit("/", 1)
        self.fs.makedirs(parent, exist_ok=True)
        self.tmp = f"{parent}/.tmp-{uuid.uuid4().hex}-{name}"
        self.handle: BinaryIO = self.fs.open(self.tmp, "wb")

    def write(self, data: Any) -> None:
        view = data.data.cast("B") if isinstance(data, np.ndarray) else data
        try:
            self.handle.write(view)
        except OSError as error:
            self._failed(error, len(view))

    def commit(self) -> None:
        try:
            self.handle.close()  # flushes the last buffer: a full disk can show only here
        except OSError as error:
            self._failed(error, 0)
        if isinstance(self.fs, LocalFileSystem):
            os.replace(self.tmp, self.path)
        else:
            self.fs.mv(self.tmp, self.path)

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self.handle.close()
        with contextlib.suppress(OSError):
            if self.fs.exists(self.tmp):
                self.fs.rm(self.tmp)

    def _failed(self, error: OSError, size: int) -> NoReturn:
        """A full disk says only "[Errno 28] No space left on device": name the shard, and
        drop the partial temporary so it neither holds the space nor stays behind."""
        self.abort()
        what = f"writing {size:,} bytes" if size else "flushing"
        raise OSError(error.errno, f"{error.strerror} ({what})", self.path) from error


@dataclass
class ShardInfo:
    prefix: str
    sequences: int
    tokens: int
    bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "sequences": self.sequences, "tokens": self.tokens,
                "bytes": self.bytes}


@dataclass
class ShardedWriter:
    """Writes a stream of sequences as `<stem>_00000.bin/.idx`, `<stem>_00001...`, in order."""

    out_dir: str
    stem: str
    dtype: np.dtype
    max_shard_bytes: int
    shards: list[ShardInfo] = field(default_factory=list)
    _bin: AtomicFile | None = None
    _lengths: list[np.ndarray] = field(default_factory=list)
    _bytes: int = 0

    def add(self, tokens: np.ndarray, lengths: np.ndarray) -> None:
        """Append whole sequences: `tokens` holds them back to back, `lengths` their sizes."""
        try:
            self._add(tokens, lengths)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Drop the shard being written (a failed task leaves no `.tmp-*.bin`)."""
        if self._bin is not None:
            self._bin.abort()
            self._bin = None

    def _add(self, tokens: np.ndarray, lengths: np.ndarray) -> None:
        itemsize = np.dtype(self.dtype).itemsize
        tokens = np.ascontiguousarray(tokens, dtype=self.dtype)
        start = 0
        while start < len(lengths):
            room = self.max_shard_bytes - self._bytes
            ends = np.cumsum(lengths[start:].astype(np.int64)) * itemsize
            fit = int(np.searchsorted(ends, room, side="right"))
            if fit == 0 and self._bytes > 0:
                self._roll()
                continue
            fit = max(fit, 1)  # a sequence larger than a whole shard gets a shard of its own
            first = int(lengths[:start].sum()) if start else 0
            count = int(ends[fit - 1] // itemsize)
            self._open().write(tokens[first:first + count])
            self._lengths.append(np.asarray(lengths[start:start + fit], np.int64))
            self._bytes += count * itemsize
            start += fit

    def close(self) -> list[ShardInfo]:
        try:
            if self._bin is not None:
                self._roll()
        except BaseException:
            self.abort()
            raise
        return self.shards

    def _open(self) -> AtomicFile:
        if self._bin is None:
            self._bin = AtomicFile(self._prefix(len(self.shards)) + ".bin")
        return self._bin

    def _roll(self) -> None:
        assert self._bin is not None
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int64)
        if lengths.size and lengths.max() >= 2**31:
            raise ValueError("a sequence of 2**31 tokens or more cannot be indexed")
        prefix = self._prefix(len(self.shards))
        self._bin.commit()
        storage.write_bytes_atomic(prefix + ".idx", index_bytes(self.dtype, lengths))
        self.shards.append(ShardInfo(prefix, len(lengths), int(lengths.sum()), self._bytes))
        self._bin, self._lengths, self._bytes = None, [], 0

    def _prefix(self, number: int) -> str:
        return storage.join(self.out_dir, f"{self.stem}_{number:05d}")


@dataclass
class Packer:
    """Re-cuts a stream of documents into sequences of exactly `size` tokens.

    Documents run on across sequence boundaries (each ends with its EOS), as
    Megatron's own GPTDataset samples do; the stream's last, shorter sequence
    comes out of `flush()` so no token is lost.
    """

    size: int
    _carry: np.ndarray | None = None

    def add(self, tokens: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        del lengths  # document boundaries no longer matter
        if self._carry is not None and len(self._carry):
            tokens = np.concatenate([self._carry, tokens])
        whole = len(tokens) // self.size
        self._carry = tokens[whole * self.size:].copy()
        return tokens[:whole * self.size], np.full(whole, self.size, np.int64)

    def flush(self) -> tuple[np.ndarray, np.ndarray]:
        carry = self._carry if self._carry is not None else np.zeros(0, np.int64)
        self._carry = None
        lengths = np.array([len(carry)], np.int64) if len(carry) else np.zeros(0, np.int64)
        return carry, lengths
