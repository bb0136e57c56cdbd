"""JSON Lines input, plain or compressed (.gz, .zst, .bz2, .xz).

A compressed file is one unit. A plain file larger than `shard.max_bytes` is cut
into byte ranges of about that size, so one huge dump is many tasks of bounded
memory: a line belongs to the range holding its first byte. A document's locator
is the byte offset of its line (`path#@1234`), which does not depend on the cut.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
from collections.abc import Iterator
from typing import IO, Any, Literal

import fsspec
import pyarrow as pa

from ..paths import LocalPath
from .common import (
    InputUnit,
    Reader,
    ReaderError,
    ReaderParams,
    RowCollector,
    RowError,
    SourceInfo,
    bad_file_table,
    coerce_field,
    decode_text,
    expand_paths,
    file_size,
)
from .where import RowFilter

_TARGETS = ("path", "repo", "license", "lang", "stars", "url", "license_type", "generated",
            "vendor")
_COMPRESSED = (".gz", ".zst", ".zstd", ".bz2", ".xz", ".lzma")


class JsonlParams(ReaderParams):
    type: Literal["jsonl"]
    paths: list[LocalPath]
    """Files or glob patterns; compression is inferred from the extension."""
    where: RowFilter | None = None
    """Read only the records whose (dotted) field has one of the values (readers/where.py);
    a line that is not a JSON object is still quarantined, as no filter can place it."""


class JsonlReader(Reader[JsonlParams]):
    Params = JsonlParams

    def plan(self, max_docs: int, max_bytes: int) -> list[InputUnit]:
        units: list[InputUnit] = []
        expansion: dict[str, float] = {}  # by extension, from the first such file
        for path, rel in expand_paths(self.params.paths, self.where):
            size = on_disk = file_size(path)
            if path.endswith(_COMPRESSED):  # one unit; its size only informs `lemur-data plan`
                ext = path.rsplit(".", 1)[-1]
                if ext not in expansion:
                    expansion[ext] = _expansion(path)
                parts, size = 1, int(size * expansion[ext])
            else:
                parts = max(1, -(-size // max_bytes))
            for k in range(parts):
                # `bytes`: the file's size now; a read stops there, however the file grows
                payload = {"path": path, "rel": rel, "bytes": on_disk}
                if parts > 1:
                    payload |= {"start": size * k // parts, "end": size * (k + 1) // parts}
                units.append(InputUnit(self.source.name, len(units), payload,
                                       bytes_hint=size // parts))
        return units

    def files(self, unit: InputUnit) -> list[str]:
        return [unit.payload["path"]]

    def read(self, unit: InputUnit) -> pa.Table:
        path, rel = unit.payload["path"], unit.payload["rel"]
        start, end = unit.payload.get("start", 0), unit.payload.get("end")
        planned: int | None = unit.payload.get("bytes")  # None: planned by an older version
        if end is None and not path.endswith(_COMPRESSED):
            end = planned
        rows = RowCollector(self.source)
        offset, line_no = start, 0
        cap = _bomb_cap(path, planned, self.source.max_doc_bytes)
        held, bomb = 0, ""
        try:
            with fsspec.open(path, "rb") as opened, \
                    _decompressed(_Bounded(opened, planned), path,
                                  self.source.max_doc_bytes) as handle:
                limit = 2 * self.source.max_doc_bytes  # the JSON of a document at the limit
                if start:  # the line holding byte start - 1 belongs to the range before
                    handle.seek(start - 1)
                    offset = start - 1 + sum(_skip_line(handle, b""))
                for line_no, (raw_line, length) in enumerate(  # noqa: B007 - used after the loop
                        _bounded_lines(handle, limit), start=1):
                    if end is not None and offset >= end:
                        break
                    # Line numbers only where counting starts at the file's first line.
                    where = f"line {line_no}" if not start else f"byte {offset}"
                    if raw_line is None:  # longer than the limit: never held in memory whole
                        rows.add(f"{rel}#@{offset}", "", "too_large",
                                 f"{rel} {where}: a line of {length} bytes, over 2x "
                                 f"max_doc_bytes ({limit}); read in pieces and dropped",
                                 path=rel)
                    elif raw_line.strip():
                        held += length
                        if cap is not None and held > cap:  # the line is not taken
                            bomb = (f"{rel}: decompressed lines past {cap:,} bytes, "
                                    f"{_MAX_RATIO:,}x the file's {planned:,} compressed "
                                    f"bytes (a decompression bomb?): not read from {where} on")
                            break
                        self._add_guarded(rows, f"{rel}#@{offset}", where, raw_line, rel)
                    offset += length
        except Exception as error:  # noqa: BLE001 - truncated or corrupt stream
            where = f"after line {line_no}" if not start else f"at byte {offset}"
            if self.source.on_bad_file == "fail":
                raise ReaderError(f"{path}: read failed {where} ({error})") from error
            table = rows.table()
            bad = bad_file_table(self.source, rel, f"read failed {where}: {error!r}"
                                 + _growth(path, planned))
            return pa.concat_tables([table, bad])
        grown = _growth(path, planned)
        if grown and (end is None or end >= (planned or 0)):  # once, by the file's last unit
            if self.source.on_bad_file == "fail":
                raise ReaderError(f"{path}{grown}")
            return pa.concat_tables([rows.table(), bad_file_table(self.source, rel, grown[2:])])
        if bomb:
            if self.source.on_bad_file == "fail":
                raise ReaderError(f"{path}: {bomb}")
            return pa.concat_tables([rows.table(), bad_file_table(self.source, rel, bomb)])
        return rows.table()

    def _add_guarded(self, rows: RowCollector, locator: str, where: str, raw: bytes,
                     rel: str) -> None:
        """One line; whatever it raises costs that line only, never the rest of the file."""
        try:
            self._add_line(rows, locator, where, raw, rel)
        except RowError as error:
            rows.add(locator, raw.decode("utf-8", "replace"), "invalid_field",
                     f"{rel} {where}: {error}", path=rel)
        except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as error:
            rows.add(locator, raw.decode("utf-8", "replace"), "invalid_json",
                     f"{rel} {where}: {type(error).__name__}: {str(error)[:200]}", path=rel)

    def _add_line(self, rows: RowCollector, locator: str, where: str, raw: bytes,
                  rel: str) -> None:
        line, bad_utf8 = decode_text(raw)
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as error:
            # also a 5,000-digit integer (int's digit limit) and 100k nested arrays
            detail = error if isinstance(error, json.JSONDecodeError) else \
                f"{type(error).__name__}: {str(error)[:200]}"
            rows.add(locator, line, "invalid_json", f"{where}: {detail}", path=rel)
            return
        if not isinstance(record, dict):
            rows.add(locator, line, "invalid_json", f"{where}: not an object", path=rel)
            return
        if self.params.where is not None and not self.params.where.matches(record):
            return  # another part of a mixed file: not this source's input
        text_key = self.source.column("text", "text")
        text = _lookup(record, text_key)
        if not isinstance(text, str):
            reason = "missing_text" if text is None else "invalid_text_type"
            rows.add(locator, line, reason, f"{where}: field {text_key!r}", path=rel)
            return
        fields = {target: coerce_field(target, self.source.column(target, ""),
                                       _lookup(record, self.source.column(target, "")))
                  for target in _TARGETS}
        fields.setdefault("path", None)
        if fields["path"] is None:
            fields["path"] = rel
        reason, detail = (("invalid_utf8", f"{where}: {bad_utf8}") if bad_utf8
                          else (None, None))
        rows.add(locator, text, reason, detail, origin=f"{rel} {where}", **fields)


_SAMPLE_BYTES = 1 << 18


def _expansion(path: str) -> float:
    """Decompressed bytes per compressed byte over the file's first 256 KiB (exact for a
    smaller file; 1.0 if it can't be read): the size of a compressed input without
    reading all of it."""
    head, out = b"", 0
    try:
        with fsspec.open(path, "rb") as raw:
            head = raw.read(_SAMPLE_BYTES)
        with _decompressed(_Bounded(io.BytesIO(head), None), path) as handle:
            while out < 256 * _SAMPLE_BYTES and (chunk := handle.read(1 << 16)):
                out += len(chunk)
    except Exception:  # noqa: BLE001 - the sample ends mid-stream; what was read counts
        pass
    return max(1.0, out / len(head)) if head else 1.0


_MAX_RATIO = 1000
"""Decompressed bytes a compressed jsonl's documents may take per compressed byte. Text
and code compress 3-10x, and gzip cannot pass 1032x; beyond this the file is mostly
one repeated run, a decompression bomb (34 KB of zstd that inflate to GBs of lines)."""


def _bomb_cap(path: str, planned: int | None, max_doc_bytes: int) -> int | None:
    """Most bytes of lines a compressed file's unit holds: `_MAX_RATIO` times its size,
    and never less than a line at the limit (2x max_doc_bytes); None for a plain file."""
    if planned is None or not path.endswith(_COMPRESSED):
        return None
    return max(_MAX_RATIO * planned, 2 * max_doc_bytes)


def _growth(path: str, planned: int | None) -> str:
    """'; grew from N to M bytes after planning...' if the file is larger than planned."""
    now = file_size(path) if planned is not None else 0
    if planned is None or now <= planned:
        return ""
    return (f"; grew from {planned:,} to {now:,} bytes after planning: read up to "
            f"byte {planned:,}, the rest is not this run's input")


class _Bounded(io.RawIOBase):
    """The first `limit` bytes of a file (all of it if None): a file that grows after
    planning is read as large as it was planned, never whole."""

    def __init__(self, raw: IO[bytes], limit: int | None) -> None:
        self._raw, self._left = raw, limit

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._raw.seekable()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        before = self._raw.tell()
        after = self._raw.seek(offset, whence)
        if self._left is not None:
            self._left += before - after
        return after

    def tell(self) -> int:
        return self._raw.tell()

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = len(view) if self._left is None else max(0, min(len(view), self._left))
        data = self._raw.read(want) if want else b""
        view[:len(data)] = data
        if self._left is not None:
            self._left -= len(data)
        return len(data)


def _decompressed(raw: io.RawIOBase, path: str,
                  max_doc_bytes: int = SourceInfo.max_doc_bytes) -> io.BufferedIOBase:
    """A line-iterable stream of the decompressed bytes, by file extension."""
    buffered = io.BufferedReader(raw, buffer_size=_PIECE)
    if path.endswith(".gz"):
        return gzip.GzipFile(fileobj=buffered)
    if path.endswith((".zst", ".zstd")):
        import zstandard

        # The frame's window is memory the decompressor fills: bounded like a line
        # (2x max_doc_bytes; at least 8 MiB, the window of zstd levels 1-19), not
        # libzstd's 128 MiB default, so a `--long`/`--ultra` frame past it is refused.
        window = max(1 << 23, 2 * max_doc_bytes)
        return io.BufferedReader(zstandard.ZstdDecompressor(max_window_size=window)
                                 .stream_reader(buffered))
    if path.endswith(".bz2"):
        return bz2.BZ2File(buffered)
    if path.endswith((".xz", ".lzma")):
        return lzma.LZMAFile(buffered)
    return buffered


def _lookup(record: dict[str, Any], key: str | None) -> Any:
    """Value at a dotted key (`meta.url`), or None."""
    if not key:
        return None
    value: Any = record
    for part in key.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


_PIECE = 1 << 16


def _bounded_lines(handle: IO[bytes] | io.BufferedIOBase, limit: int,
                   ) -> Iterator[tuple[bytes | None, int]]:
    """(line, its length) of each line, holding at most `limit` + 1 bytes of one line: a
    line longer than that (a 400 MB line inside a 611 KB gzip) comes as (None, its
    length), its rest skipped in pieces, so memory stays bounded by the limit whatever
    the compression ratio or the growth of the file since planning.

    Read in pieces of 64 KiB, joined once the line is whole: one `readline(limit + 1)`
    would build the line from a list of buffer-sized chunks and then join them, holding
    it twice (measured: +75 MB for a 32 MiB limit)."""
    while True:
        pieces: list[bytes] = []
        held = 0
        while True:
            piece = handle.readline(min(_PIECE, limit + 1 - held))
            pieces.append(piece)
            held += len(piece)
            if not piece or piece.endswith(b"\n") or held > limit:
                break
        if not held:
            return
        if held > limit:
            pieces.clear()
            yield None, held + sum(_skip_line(handle, b""))
            continue
        line = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        pieces.clear()
        yield line, held


def _skip_line(handle: IO[bytes] | io.BufferedIOBase, first: bytes) -> Iterator[int]:
    """Lengths of the pieces up to the end of the current line (`first` already read; an
    empty `first` means none read yet)."""
    piece = first
    if piece:
        yield len(piece)
        if piece.endswith(b"\n"):
            return
    while True:
        piece = handle.readline(_PIECE)
        if not piece:
            return
        yield len(piece)
        if piece.endswith(b"\n"):
            return
