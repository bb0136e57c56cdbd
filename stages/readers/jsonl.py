"""JSON Lines input, plain or compressed (.gz, .zst, .bz2, .xz).

A file larger than `shard.max_bytes` is cut into byte ranges of about that size, so one
huge dump is many tasks of bounded memory: a line belongs to the range holding its first
byte. A compressed file is cut the same way over its *decompressed* bytes (compressed.py
says how that size is known at planning, and what a range past the first costs). A
document's locator is the byte offset of its line (`path#@1234`, decompressed bytes for
a compressed file), which does not depend on the cut. A remote compressed file (`hf://`,
`s3://`) is sized without reading it whole, its last unit reading on past that size by
up to one unit; one that decompresses further still is not cut short: that unit counts
the rest (up to the bomb cap) without holding it, and the runner reads it in the units
`plan_more` cuts it into (`read_more`, pipeline/planner.py `Continuations`).
"""

from __future__ import annotations

import io
import json
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
    bad_file_table,
    coerce_field,
    decode_text,
    expand_paths,
    file_size,
)
from .compressed import (
    COMPRESSED,
    MAX_PARTS,
    MAX_RATIO,
    PIECE,
    Bounded,
    bomb_cap,
    decompressed,
    inflated_size,
    remote_sizes,
)
from .where import RowFilter

_TARGETS = ("path", "repo", "license", "lang", "stars", "url", "license_type", "generated",
            "vendor")


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
        listed = [(path, rel, file_size(path))
                  for path, rel in expand_paths(self.params.paths, self.where)]
        # Remote compressed files: sized together, by a few ranged reads (remote_sizes)
        remote = remote_sizes([(path, size) for path, _, size in listed
                                if path.endswith(COMPRESSED) and "://" in path],
                               self.source.max_doc_bytes)
        for path, rel, on_disk in listed:
            size = on_disk
            # `bytes`: the file's size now; a read stops there, however the file grows
            payload: dict[str, Any] = {"path": path, "rel": rel, "bytes": on_disk}
            end = None  # the last unit's end: the planned size, or the stream limit past it
            hint = 1  # the planned size over this: what `lemur-data plan` charges
            if path in remote:
                # Not read whole to plan (59,166 SlimPajama files on the Hub): sized from
                # a header or a sample, the last unit reading on past that size by up to
                # one unit's bytes; the rest, if any, up to the bomb cap, by more units
                # once it has been found (read_more, plan_more).
                size, estimated = remote[path]
                hint = 2 if estimated else 1  # an estimate is planned doubled
                cap = bomb_cap(on_disk, self.source.max_doc_bytes)
                size = min(size, cap)  # a header may state any size
                parts = _parts(size, max_bytes, MAX_PARTS)
                end = min(cap, size + -(-size // parts))
                payload |= ({"inflated": end} | ({"estimated": True} if estimated else {})
                            | ({"capped": True} if end == cap else {}))
            elif path.endswith(COMPRESSED):
                # `inflated`: the decompressed bytes planned; a read stops there too
                size, capped = inflated_size(path, on_disk, self.source.max_doc_bytes)
                payload |= {"inflated": size} | ({"capped": True} if capped else {})
                parts = _parts(size, max_bytes, MAX_PARTS)
            else:
                parts = _parts(size, max_bytes)
            for k, (first, last) in enumerate(_ranges(0, size, parts)):
                if end is not None and k == parts - 1:
                    last = end
                ranged = payload | ({"start": first, "end": last} if parts > 1 else {})
                units.append(InputUnit(self.source.name, len(units), ranged,
                                       bytes_hint=size // parts // hint))
        return units

    def files(self, unit: InputUnit) -> list[str]:
        return [unit.payload["path"]]

    def plan_more(self, unit: InputUnit, more: dict[str, Any], max_docs: int,
                  max_bytes: int) -> list[tuple[dict[str, Any], int]]:
        """Units for the decompressed range `read_more` found past a remote file's plan:
        cut like a planned file's (at most MAX_PARTS units of about `max_bytes`), sized
        by its count (`counted`: they read no further)."""
        start, end = more["start"], more["end"]
        kept = {k: v for k, v in unit.payload.items()
                if k not in ("start", "end", "inflated", "estimated", "capped")}
        payload = kept | {"inflated": end, "counted": True} | (
            {"capped": True} if more["capped"] else {})
        parts = _parts(end - start, max_bytes, MAX_PARTS)
        return [(payload | {"start": first, "end": last}, (end - start) // parts)
                for first, last in _ranges(start, end - start, parts)]

    def read(self, unit: InputUnit) -> pa.Table:
        return self.read_more(unit)[0]

    def read_more(self, unit: InputUnit) -> tuple[pa.Table, dict[str, Any] | None]:
        path, rel = unit.payload["path"], unit.payload["rel"]
        start, end = unit.payload.get("start", 0), unit.payload.get("end")
        planned: int | None = unit.payload.get("bytes")  # None: planned by an older version
        compressed = path.endswith(COMPRESSED)
        inflated: int | None = unit.payload.get("inflated") if compressed else planned
        if end is None:
            end = inflated
        last = end is None or end >= (inflated or 0)  # the file's last unit
        # A remote file sized from its first bytes (a header or a sample) may decompress
        # further: that is more input, up to the bomb cap, which units planned after
        # this one read (`more`); a count (local, or `counted`) or the cap is final.
        reads_on = bomb_cap(planned, self.source.max_doc_bytes) \
            if compressed and "://" in path and planned is not None \
            and not unit.payload.get("counted") and not unit.payload.get("capped") else None
        rows = RowCollector(self.source)
        offset, line_no, skipping = start, 0, False
        beyond = ""  # why a compressed file's bytes past the planned ones are not read
        more: dict[str, Any] | None = None  # the range past the plan, read by more units
        try:
            with fsspec.open(path, "rb") as opened, \
                    decompressed(Bounded(opened, planned), path,
                                  self.source.max_doc_bytes) as stream:
                # a compressed file is read up to its planned decompressed size, as a
                # plain one up to its planned size (Bounded on the file, above)
                handle = io.BufferedReader(Bounded(stream, inflated), buffer_size=PIECE) \
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
                            beyond, more = _beyond(stream, unit.payload, offset, reads_on)
                        except Exception:  # the stream fails here: this line is not read
                            line_no -= 1
                            raise
                        if beyond or more:  # the plan cut the line: the record or the
                            break           # units after this one cover it
                    if raw_line is None:  # longer than the limit: never held in memory whole
                        rows.add(f"{rel}#@{offset}", "", "too_large",
                                 f"{rel} {where}: a line of {length} bytes, over 2x "
                                 f"max_doc_bytes ({limit}); read in pieces and dropped",
                                 path=rel)
                    elif raw_line.strip():
                        self._add_guarded(rows, f"{rel}#@{offset}", where, raw_line, rel)
                    offset += length
                    if reaches and not cut:
                        beyond, more = _beyond(stream, unit.payload, offset, reads_on)
                    if end is not None and offset >= end:
                        break  # the next line belongs to the next unit: not read
                if compressed and inflated == 0:  # nothing planned: planning's read failed
                    beyond, more = _beyond(stream, unit.payload, 0, reads_on)
        except Exception as error:  # noqa: BLE001 - truncated or corrupt stream
            if skipping:  # in the lines of a unit before this one: that unit names it
                return rows.table(), None
            where = f"after line {line_no}" if not start else f"at byte {offset}"
            if self.source.on_bad_file == "fail":
                raise ReaderError(f"{path}: read failed {where} ({error})") from error
            table = rows.table()
            bad = bad_file_table(self.source, rel, f"read failed {where}: {error!r}"
                                 + _growth(path, planned))
            return pa.concat_tables([table, bad]), None
        # once, by the file's last unit (a unit whose file goes on is not)
        grown = _growth(path, planned) if last and more is None else ""
        problems = [f"{rel}: {why}" for why in (grown[2:], beyond) if why]
        if not problems:
            return rows.table(), more
        if self.source.on_bad_file == "fail":
            raise ReaderError(f"{path}: {'; '.join(problems)}")
        return pa.concat_tables([rows.table(), bad_file_table(self.source, rel,
                                                              "; ".join(problems))]), more

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



def _parts(size: int, max_bytes: int, most: int | None = None) -> int:
    """How many units of about `max_bytes` cut `size` bytes (at least one; at most
    `most`, a compressed file's MAX_PARTS, since each unit decompresses those before)."""
    parts = max(1, -(-size // max_bytes))
    return parts if most is None else min(most, parts)


def _ranges(start: int, size: int, parts: int) -> list[tuple[int, int]]:
    """`size` bytes from `start` cut into `parts` ranges as even as integers allow."""
    return [(start + size * k // parts, start + size * (k + 1) // parts)
            for k in range(parts)]


def _beyond(stream: IO[bytes] | io.BufferedIOBase, payload: Any, at: int,
            reads_on: int | None = None) -> tuple[str, dict[str, Any] | None]:
    """(why a compressed file's decompressed bytes past the planned ones are not read,
    None), or ("", None) if the stream ends there; the stream's error if it fails there
    (a truncated file, counted at planning up to its cut). Counts what follows, up to
    the planned size again (a bomb costs at most twice its cap), to say how much.

    `reads_on`, the bomb cap of a file sized from its first bytes: what follows is more
    input, counted up to the cap without being held, and returned as the range the
    units after this one read: ("", {start: `at`, end, capped: past the cap})."""
    inflated: int = payload["inflated"]
    room = inflated if reads_on is None else max(0, reads_on - inflated)
    rest, error = 0, ""
    try:
        while rest <= room and (chunk := stream.read(min(1 << 20, room + 1 - rest))):
            rest += len(chunk)
    except Exception as failure:  # noqa: BLE001 - the stream is corrupt past the plan
        if not rest:  # a truncated or corrupt file: a read failure, named as one
            raise
        error = repr(failure)
    if not rest:  # the stream ends there, as planned
        return "", None
    if reads_on is not None:  # up to a stream error, if any: the unit reading there names it
        return "", {"start": at, "end": min(inflated + rest, reads_on),
                    "capped": rest > room}
    more = f"{rest + inflated - at:,}" if rest <= inflated else f"more than {inflated:,}"
    why = (f"decompressed lines past {inflated:,} bytes, {MAX_RATIO:,}x the file's "
           f"{payload['bytes']:,} compressed bytes (a decompression bomb?)"
           if payload.get("capped") else
           f"decompresses past the {inflated:,} bytes planned (stated by its headers or "
           "counted at planning)")
    failed = f"; then the stream failed: {error}" if error else ""
    return f"{why}: not read from decompressed byte {at:,} on ({more} bytes){failed}", None


def _skip(handle: IO[bytes] | io.BufferedIOBase, count: int) -> None:
    """Read and drop `count` bytes (fewer if the stream ends), 64 KiB at a time."""
    while count > 0 and (piece := handle.read(min(PIECE, count))):
        count -= len(piece)


def _growth(path: str, planned: int | None) -> str:
    """'; grew from N to M bytes after planning...' if the file is larger than planned."""
    now = file_size(path) if planned is not None else 0
    if planned is None or now <= planned:
        return ""
    return (f"; grew from {planned:,} to {now:,} bytes after planning: read up to "
            f"byte {planned:,}, the rest is not this run's input")




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
            piece = handle.readline(min(PIECE, limit + 1 - held))
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
        piece = handle.readline(PIECE)
        if not piece:
            return
        yield len(piece)
        if piece.endswith(b"\n"):
            return
