"""JSON Lines input, plain or compressed (.gz, .zst, .bz2, .xz).

A file larger than `shard.max_bytes` is cut into byte ranges of about that size, so one
huge dump is many tasks of bounded memory: a line belongs to the range holding its first
byte. A compressed file is cut the same way over its *decompressed* bytes (see
`_inflated_size` for how that size is known at planning, and `_MAX_PARTS` for what a
range past the first costs). A document's locator is the byte offset of its line
(`path#@1234`, decompressed bytes for a compressed file), which does not depend on the
cut.
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
        expansion: dict[str, float] = {}  # remote files, by extension, from the first one
        for path, rel in expand_paths(self.params.paths, self.where):
            size = on_disk = file_size(path)
            # `bytes`: the file's size now; a read stops there, however the file grows
            payload: dict[str, Any] = {"path": path, "rel": rel, "bytes": on_disk}
            if path.endswith(_COMPRESSED) and "://" in path:
                # Not read to plan (59,166 SlimPajama files on the Hub would each cost
                # requests or a download): one unit, read up to the bomb cap. Its size
                # is estimated, for `lemur-data plan` only.
                ext = path.rsplit(".", 1)[-1]
                if ext not in expansion:
                    expansion[ext] = _expansion(path)
                cap = _bomb_cap(on_disk, self.source.max_doc_bytes)
                payload |= {"inflated": cap, "capped": True}
                parts, size = 1, min(cap, int(size * expansion[ext]))
            elif path.endswith(_COMPRESSED):
                # `inflated`: the decompressed bytes planned; a read stops there too
                size, capped = _inflated_size(path, on_disk, self.source.max_doc_bytes)
                payload |= {"inflated": size} | ({"capped": True} if capped else {})
                parts = min(_MAX_PARTS, max(1, -(-size // max_bytes)))
            else:
                parts = max(1, -(-size // max_bytes))
            for k in range(parts):
                ranged = payload | ({"start": size * k // parts,
                                     "end": size * (k + 1) // parts} if parts > 1 else {})
                units.append(InputUnit(self.source.name, len(units), ranged,
                                       bytes_hint=size // parts))
        return units

    def files(self, unit: InputUnit) -> list[str]:
        return [unit.payload["path"]]

    def read(self, unit: InputUnit) -> pa.Table:
        path, rel = unit.payload["path"], unit.payload["rel"]
        start, end = unit.payload.get("start", 0), unit.payload.get("end")
        planned: int | None = unit.payload.get("bytes")  # None: planned by an older version
        compressed = path.endswith(_COMPRESSED)
        inflated: int | None = unit.payload.get("inflated") if compressed else planned
        if end is None:
            end = inflated
        last = end is None or end >= (inflated or 0)  # the file's last unit
        rows = RowCollector(self.source)
        offset, line_no, skipping = start, 0, False
        beyond = ""  # why a compressed file's bytes past the planned ones are not read
        try:
            with fsspec.open(path, "rb") as opened, \
                    _decompressed(_Bounded(opened, planned), path,
                                  self.source.max_doc_bytes) as stream:
                # a compressed file is read up to its planned decompressed size, as a
                # plain one up to its planned size (_Bounded on the file, above)
                handle = io.BufferedReader(_Bounded(stream, inflated), buffer_size=_PIECE) \
                    if compressed and inflated is not None else stream
                limit = 2 * self.source.max_doc_bytes  # the JSON of a document at the limit
                if start:  # the line holding byte start - 1 belongs to the range before
                    skipping = True  # a failure here is in a unit before, which names it
                    if compressed:  # no index: decompress the ranges before, in pieces
                        _skip(handle, start - 1)
                    else:
                        handle.seek(start - 1)
                    offset = start - 1 + sum(_skip_line(handle, b""))
                    skipping = False
                for line_no, (raw_line, length) in enumerate(  # noqa: B007 - used after the loop
                        _bounded_lines(handle, limit) if end is None or offset < end else (),
                        start=1):
                    # Line numbers only where counting starts at the file's first line.
                    where = f"line {line_no}" if not start else f"byte {offset}"
                    # the planned bytes end with this line: does the stream end too?
                    reaches = compressed and offset + length == inflated
                    cut = reaches and (raw_line is None or not raw_line.endswith(b"\n"))
                    if cut:
                        try:
                            beyond = _beyond(stream, unit.payload, offset)
                        except Exception:  # the stream fails here: this line is not read
                            line_no -= 1
                            raise
                        if beyond:  # the plan cut the line: the record covers it
                            break
                    if raw_line is None:  # longer than the limit: never held in memory whole
                        rows.add(f"{rel}#@{offset}", "", "too_large",
                                 f"{rel} {where}: a line of {length} bytes, over 2x "
                                 f"max_doc_bytes ({limit}); read in pieces and dropped",
                                 path=rel)
                    elif raw_line.strip():
                        self._add_guarded(rows, f"{rel}#@{offset}", where, raw_line, rel)
                    offset += length
                    if reaches and not cut:
                        beyond = _beyond(stream, unit.payload, offset)
                    if end is not None and offset >= end:
                        break  # the next line belongs to the next unit: not read
                if compressed and inflated == 0:  # nothing planned: planning's count failed
                    beyond = _beyond(stream, unit.payload, 0)
        except Exception as error:  # noqa: BLE001 - truncated or corrupt stream
            if skipping:  # in the lines of a unit before this one: that unit names it
                return rows.table()
            where = f"after line {line_no}" if not start else f"at byte {offset}"
            if self.source.on_bad_file == "fail":
                raise ReaderError(f"{path}: read failed {where} ({error})") from error
            table = rows.table()
            bad = bad_file_table(self.source, rel, f"read failed {where}: {error!r}"
                                 + _growth(path, planned))
            return pa.concat_tables([table, bad])
        grown = _growth(path, planned) if last else ""  # once, by the file's last unit
        problems = [f"{rel}: {why}" for why in (grown[2:], beyond) if why]
        if not problems:
            return rows.table()
        if self.source.on_bad_file == "fail":
            raise ReaderError(f"{path}: {'; '.join(problems)}")
        return pa.concat_tables([rows.table(), bad_file_table(self.source, rel,
                                                              "; ".join(problems))])

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


_MAX_RATIO = 1000
"""Decompressed bytes a compressed jsonl may take per compressed byte. Text and code
compress 3-10x, and gzip cannot pass 1032x; beyond this the file is mostly one repeated
run, a decompression bomb (34 KB of zstd that inflate to GBs of lines)."""

_MAX_PARTS = 32
"""Most units a compressed file is cut into. There is no index into a gzip or zstd
stream, so unit k decompresses the k ranges before its own and drops them: a file of n
units costs n(n+1)/2 ranges of decompression, (n+1)/2 times the file (16.5x at 32),
decompression being the cheap part of a read (zstd ~1 GB/s, gzip ~0.3 GB/s per core;
parsing JSON into rows is slower). A file past 32x `shard.max_bytes` decompressed (8 GiB
with the default 256 MiB) gets 32 larger units instead: its memory follows its size."""


def _inflated_size(path: str, compressed: int, max_doc_bytes: int) -> tuple[int, bool]:
    """(decompressed bytes to plan, True if cut at the bomb cap) for a compressed file.

    A zstd file whose frames all state their content size (the `zstd` CLI and most
    writers do) is sized from its frame and block headers alone; libzstd checks each
    frame's stated size as it decompresses, so a lie is a read error. Other files (gzip,
    whose ISIZE is only the last member's size mod 2**32; bz2; xz; zstd without sizes)
    are decompressed once here and counted. Either way the size stops at `_MAX_RATIO`
    times the compressed size (at least 2x max_doc_bytes, one line at the limit): the
    count never decompresses more, and a file found longer when read has one record
    saying what was not read."""
    cap = _bomb_cap(compressed, max_doc_bytes)
    stated = _zstd_stated_size(path) if path.endswith((".zst", ".zstd")) else None
    if stated is not None:
        return min(stated, cap), stated > cap
    counted = 0
    try:
        with fsspec.open(path, "rb") as raw, \
                _decompressed(_Bounded(raw, None), path, max_doc_bytes) as handle:
            # read1: what decompresses before an error counts (a truncated file's lines)
            while counted <= cap and (chunk := handle.read1(min(1 << 20, cap + 1 - counted))):
                counted += len(chunk)
    except Exception:  # noqa: BLE001 - corrupt: planned up to the error, which the read names
        pass
    return min(counted, cap), counted > cap


def _bomb_cap(compressed: int, max_doc_bytes: int) -> int:
    """Most decompressed bytes a compressed file is read to: `_MAX_RATIO` times its size,
    and never less than a line at the limit (2x max_doc_bytes)."""
    return max(_MAX_RATIO * compressed, 2 * max_doc_bytes)


_SAMPLE_BYTES = 1 << 18


def _expansion(path: str) -> float:
    """Decompressed bytes per compressed byte over the file's first 256 KiB (exact for a
    smaller file; 1.0 if it can't be read): a remote file's size without reading it."""
    head, out = b"", 0
    try:
        with fsspec.open(path, "rb") as raw:
            head = raw.read(_SAMPLE_BYTES)
        with _decompressed(_Bounded(io.BytesIO(head), None), path) as handle:
            while out < 256 * _SAMPLE_BYTES and (chunk := handle.read1(1 << 16)):
                out += len(chunk)
    except Exception:  # noqa: BLE001 - the sample ends mid-stream; what was read counts
        pass
    return max(1.0, out / len(head)) if head else 1.0


_ZSTD_MAGIC, _SKIPPABLE = 0xFD2FB528, 0x184D2A50


def _zstd_stated_size(path: str) -> int | None:
    """The sum of a zstd file's frame content sizes, read from its frame and block
    headers (RFC 8878 section 3.1), or None if a frame does not state it or the headers
    do not parse (the file is then counted by decompressing it)."""
    import zstandard

    total, position = 0, 0
    try:
        with fsspec.open(path, "rb") as raw:
            while head := (raw.seek(position), raw.read(18))[1]:
                magic = int.from_bytes(head[:4], "little")
                if magic & 0xFFFFFFF0 == _SKIPPABLE:  # skippable frame: 4 + 4 + its size
                    position += 8 + int.from_bytes(head[4:8], "little")
                    continue
                if magic != _ZSTD_MAGIC:
                    return None
                frame = zstandard.get_frame_parameters(head)
                if frame.content_size == zstandard.CONTENTSIZE_UNKNOWN:
                    return None
                position += zstandard.frame_header_size(head)
                while True:  # 3-byte block headers: last flag, type, size
                    raw.seek(position)
                    block = int.from_bytes(raw.read(3).ljust(3, b"\xff"), "little")
                    kind, size = (block >> 1) & 3, block >> 3
                    if kind == 3:  # reserved (or the file ended): not a valid frame
                        return None
                    position += 3 + (1 if kind == 1 else size)
                    if block & 1:
                        break
                position += 4 if frame.has_checksum else 0
                total += frame.content_size
    except Exception:  # noqa: BLE001 - not parseable as zstd frames: counted instead
        return None
    return total


def _beyond(stream: IO[bytes] | io.BufferedIOBase, payload: Any, at: int) -> str:
    """Why a compressed file's decompressed bytes past the planned ones are not read, or
    "" if the stream ends there; the stream's error if it fails there (a truncated
    file, counted at planning up to its cut). Counts what follows, up to the planned
    size again (a bomb costs at most twice its cap), to say how much."""
    inflated: int = payload["inflated"]
    rest, error = 0, ""
    try:
        while rest <= inflated and (chunk := stream.read(min(1 << 20, inflated + 1 - rest))):
            rest += len(chunk)
    except Exception as failure:  # noqa: BLE001 - the stream is corrupt past the plan
        if not rest:  # a truncated or corrupt file: a read failure, named as one
            raise
        error = repr(failure)
    if not rest:  # the stream ends there, as planned
        return ""
    more = f"{rest + inflated - at:,}" if rest <= inflated else f"more than {inflated:,}"
    why = (f"decompressed lines past {inflated:,} bytes, {_MAX_RATIO:,}x the file's "
           f"{payload['bytes']:,} compressed bytes (a decompression bomb?)"
           if payload.get("capped") else
           f"decompresses past the {inflated:,} bytes planned (stated by its headers or "
           "counted at planning)")
    failed = f"; then the stream failed: {error}" if error else ""
    return f"{why}: not read from decompressed byte {at:,} on ({more} bytes){failed}"


def _skip(handle: IO[bytes] | io.BufferedIOBase, count: int) -> None:
    """Read and drop `count` bytes (fewer if the stream ends), 64 KiB at a time."""
    while count > 0 and (piece := handle.read(min(_PIECE, count))):
        count -= len(piece)


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

    def __init__(self, raw: IO[bytes] | io.BufferedIOBase, limit: int | None) -> None:
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
                                 .stream_reader(buffered, read_across_frames=True),
                                 buffer_size=_PIECE)
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
