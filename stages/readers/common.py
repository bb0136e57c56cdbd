"""What every reader shares: the contract (`Reader`), the source it reads for, input
units, row collection."""

from __future__ import annotations

import glob as globlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar, get_args

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from ..storage import DOCUMENT_COLUMNS, DOCUMENT_SCHEMA, document_id

# Reader output: the document schema plus why a record was quarantined (null = fine).
READ_SCHEMA = DOCUMENT_SCHEMA.append(pa.field("reason", pa.string())).append(
    pa.field("detail", pa.string())
)


class ReaderError(Exception):
    """Input that cannot be read as configured; the message names the file and key."""


class ReaderParams(BaseModel):
    """A reader's manifest parameters (`sources[].reader`). Each reader's subclass has a
    `type: Literal["name"]` field: the reader's name in the manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def type_name(cls) -> str:
        """The reader's name in the manifest: the subclass's `type` literal."""
        (name,) = get_args(cls.model_fields["type"].annotation)
        return str(name)


@dataclass(frozen=True)
class SourceInfo:
    """The parts of a manifest source a reader needs."""

    name: str
    kind: Literal["code", "text"]
    columns: Mapping[str, str] = field(default_factory=dict)
    lang: str | None = None
    max_doc_bytes: int = 16 * 2**20
    on_bad_file: Literal["fail", "quarantine"] = "quarantine"

    def column(self, target: str, default: str | None = None) -> str | None:
        """Input column that feeds document column `target`."""
        return self.columns.get(target, default)


@dataclass(frozen=True)
class InputUnit:
    """A deterministic slice of a source's input: one shard's worth of ingest work."""

    source: str
    index: int
    payload: Mapping[str, Any]
    docs_hint: int = 0
    bytes_hint: int = 0

    @property
    def shard_id(self) -> str:
        return f"{self.source}-{self.index:05d}"


P = TypeVar("P", bound=ReaderParams)
"""A reader's own parameter model; `self.params` has that type."""


class Reader(ABC, Generic[P]):
    """An input format: lists a source's input as units (`plan`) and reads one unit as
    documents (`read`). Built from the manifest's `reader:` parameters and the source,
    in the driver to plan and in each worker to read, so it holds no open files.

    A reader quarantines what it cannot use (a row with `reason` set, `detail` naming the
    file and line) rather than raising, unless `source.on_bad_file` is `fail`; it raises
    `ReaderError` for input that cannot be read as configured at all.
    """

    Params: ClassVar[type[ReaderParams]]
    """The class the manifest's `reader:` mapping is validated with (the reader's `P`);
    its `type` literal is the reader's name (`type_name`)."""

    def __init__(self, params: P, source: SourceInfo) -> None:
        self.params: P = params
        self.source = source

    @classmethod
    def type_name(cls) -> str:
        """The reader's name in the manifest: its Params' `type` literal."""
        return cls.Params.type_name()

    @property
    def where(self) -> str:
        """How error messages name the source: `source 'name'`."""
        return f"source {self.source.name!r}"

    @abstractmethod
    def plan(self, max_docs: int, max_bytes: int) -> list[InputUnit]:
        """The source's input cut into units of at most `max_docs` documents and about
        `max_bytes` bytes. Deterministic (same input, same units, whatever the worker
        count) and cheap: listings and footers, not the documents."""

    def files(self, unit: InputUnit) -> list[str]:
        """The files (paths or URLs) a unit of `plan` reads, for the run's listing record
        (pipeline/listing.py stamps each with its size and mtime). None by default: such
        a unit is known by its payload alone."""
        return []

    @abstractmethod
    def read(self, unit: InputUnit) -> pa.Table:
        """The documents of one unit of `plan`, as a READ_SCHEMA table; rows to
        quarantine have `reason` (and `detail`) set."""

    def read_more(self, unit: InputUnit) -> tuple[pa.Table, dict[str, Any] | None]:
        """`read`, and the input this unit found past what `plan` saw (JSON), or None.
        A reader whose plan may fall short of its input (jsonl: a remote compressed file
        sized from its first bytes) says so here rather than leave the rest unread; the
        runner then reads it in the units of `plan_more`. `read` alone drops it."""
        return self.read(unit), None

    def plan_more(self, unit: InputUnit, more: dict[str, Any], max_docs: int,
                  max_bytes: int) -> list[tuple[dict[str, Any], int]]:
        """(payload, bytes hint) of the units that read `more`, which `read_more` of
        `unit` returned: cut like `plan`'s units. Deterministic: the same `more`, the
        same units."""
        return []


class RowCollector:
    """Accumulates document rows (with quarantine reasons) into a READ_SCHEMA table."""

    def __init__(self, source: SourceInfo) -> None:
        self.source = source
        self.columns: dict[str, list[Any]] = {name: [] for name in READ_SCHEMA.names}
        self.origins: list[str | None] = []

    def add(self, locator: str, text: str, reason: str | None = None,
            detail: str | None = None, origin: str | None = None, **fields: Any) -> None:
        """One row; `origin` (file and line) is only used to name a row that turns out to
        hold a lone surrogate, which arrow cannot store (see `table`)."""
        try:
            doc_id = document_id(self.source.name, locator)
        except UnicodeEncodeError:  # a non-UTF-8 file name or JSON "\ud800" in the locator
            doc_id = document_id(self.source.name, escape_surrogates(locator))
        row = {"id": doc_id, "text": text,
               "source": self.source.name, "kind": self.source.kind,
               "lang": self.source.lang, "reason": reason, "detail": detail}
        row.update({k: v for k, v in fields.items() if v is not None})
        for name in READ_SCHEMA.names:
            self.columns[name].append(row.get(name))
        self.origins.append(origin)

    def table(self) -> pa.Table:
        try:
            return pa.Table.from_pydict(self.columns, schema=READ_SCHEMA)
        except UnicodeEncodeError:
            # Rare, so the clean path pays nothing: find the rows, quarantine them.
            self._quarantine_surrogates()
            return pa.Table.from_pydict(self.columns, schema=READ_SCHEMA)

    def _quarantine_surrogates(self) -> None:
        """Quarantine rows with a lone surrogate (`ingest:invalid_unicode`), escaping it
        so the row can be stored, and name the file, line and field in `detail`."""
        names = [n for n, t in zip(READ_SCHEMA.names, READ_SCHEMA.types, strict=True)
                 if pa.types.is_string(t) or pa.types.is_large_string(t)]
        for i, origin in enumerate(self.origins):
            bad = [n for n in names if _has_surrogate(self.columns[n][i])]
            if not bad:
                continue
            first = self.columns[bad[0]][i]
            char = next(c for c in first if "\ud800" <= c <= "\udfff")
            for n in bad:
                self.columns[n][i] = escape_surrogates(self.columns[n][i])
            self.columns["reason"][i] = "invalid_unicode"
            if origin is None and bad[0] == "path" and "\udc80" <= char <= "\udcff":
                # a file name from the file system: surrogateescape of a non-UTF-8 byte
                self.columns["detail"][i] = (f"{self.columns['path'][i]}: file name is not "
                                             f"UTF-8 (byte 0x{ord(char) - 0xDC00:02X})")
            else:
                where = origin or self.columns["path"][i]
                self.columns["detail"][i] = (f"{where}: lone surrogate U+{ord(char):04X} "
                                             f"in field {bad[0]!r}")


def _has_surrogate(value: Any) -> bool:
    if not isinstance(value, str) or value.isascii():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def escape_surrogates(value: str) -> str:
    """`value` storable as UTF-8: bytes of a non-UTF-8 file name (surrogateescape) as
    `\\xe9`, any other lone surrogate as `\\ud800`. Deterministic, so ids stay stable."""
    try:
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")


def bad_file_table(source: SourceInfo, rel: str, error: str) -> pa.Table:
    """One quarantine record standing for a file that could not be read at all."""
    row: dict[str, Any] = {name: None for name in READ_SCHEMA.names}
    row.update(id=document_id(source.name, f"{rel}#file"), text="", source=source.name,
               kind=source.kind, path=rel, reason="unreadable_file", detail=error[:2000])
    return pa.Table.from_pylist([row], schema=READ_SCHEMA)


# Longest first: the UTF-32 LE BOM starts with the UTF-16 LE one.
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le"), (b"\x00\x00\xfe\xff", "utf-32-be"),
         (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


class RowError(ValueError):
    """A row with a mapped field that cannot be stored as its column's type: quarantined
    alone (`ingest:invalid_field`, naming the file, row and field), never the whole file."""


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def coerce_field(target: str, key: str | None, value: Any) -> Any:
    """A mapped value as its document column stores it, or RowError naming `key`.

    `stars` must be a whole number within int64 (a "x", a float, 2**64 or Infinity is an
    error, not a silent None or -1); a list (licenses) is joined without its nulls, so
    ["MIT", null] is "MIT", not "MIT,None"; a mapping (a struct `repo`) is an error."""
    if value is None:
        return None
    if target == "stars":
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise RowError(f"field {key!r} ({target}) is {type(value).__name__} "
                           f"{str(value)[:40]!r}, not a whole number")
        try:
            number = int(value)
        except ValueError:
            raise RowError(f"field {key!r} ({target}) is {str(value)[:40]!r}, not a whole "
                           "number") from None
        if not INT64_MIN <= number <= INT64_MAX:
            raise RowError(f"field {key!r} ({target}) is {str(number)[:40]}..., beyond int64")
        return number
    if target in ("generated", "vendor"):
        return value if isinstance(value, bool) else None
    if isinstance(value, dict):
        raise RowError(f"field {key!r} ({target}) is a mapping, not a string")
    if isinstance(value, bytes):  # a binary column: its text, never "b'...'"
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RowError(f"field {key!r} ({target}) is bytes that are not UTF-8 (byte "
                           f"{error.start})") from None
    if isinstance(value, list):
        return ",".join(str(v) for v in value if v is not None) or None
    return str(value)


def decode_bom(raw: bytes) -> tuple[str, str | None] | None:
    """Text of a UTF-16/32 file that starts with its byte order mark (Windows editors write
    them; The Stack v2 decodes by its `src_encoding` the same way), the BOM dropped; None
    for bytes without one. A file that does not decode keeps replacement characters and
    gets a reason, as invalid UTF-8 does."""
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            body = raw[len(bom):]
            try:
                return body.decode(codec), None
            except UnicodeDecodeError as error:
                return (body.decode(codec, "replace"),
                        f"invalid_utf8 ({codec} with a BOM) at byte {error.start + len(bom)}")
    return None


def decode_text(raw: bytes) -> tuple[str, str | None]:
    """UTF-8 text and a quarantine reason (None when the bytes are clean)."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as error:
        return raw.decode("utf-8", "replace"), f"invalid_utf8 at byte {error.start}"


_GLOB_CHARS = re.compile(r"[*?\[]")


def static_prefix(pattern: str) -> str:
    """The folder part of a glob before its first wildcard (ids are relative to it)."""
    match = _GLOB_CHARS.search(pattern)
    head = pattern if match is None else pattern[: match.start()]
    return head.rsplit("/", 1)[0] + "/" if "/" in head else ""


def expand_paths(patterns: list[str], what: str) -> list[tuple[str, str]]:
    """(full path, id path) for every file the glob patterns match, sorted and unique.

    Local paths use the standard glob; URLs (s3://, hf://, ...) use fsspec.
    """
    from fsspec.core import url_to_fs

    found: dict[str, str] = {}
    for pattern in patterns:
        prefix = static_prefix(pattern)
        if "://" in pattern:
            fs, _ = url_to_fs(pattern)
            protocol = pattern.split("://", 1)[0]
            bare_prefix = prefix.split("://", 1)[1] if "://" in prefix else prefix
            matches = [f"{protocol}://{p}" for p in fs.glob(pattern.split("://", 1)[1])]
            pairs = [(m, m.split("://", 1)[1][len(bare_prefix):]) for m in matches]
        else:
            matches = globlib.glob(pattern, recursive=True)
            pairs = [(m, m[len(prefix):]) for m in matches if os.path.isfile(m)]
        if not pairs:
            raise ReaderError(f"{what}: pattern {pattern!r} matches no files")
        for full, rel in pairs:
            found.setdefault(full, rel)
    return sorted(found.items())


def stamp(path: str) -> list[Any]:
    """What a resumed run compares to know a file is the one the run first listed
    (pipeline/listing.py), without reading it: a local file's [size, modification time,
    status change time, inode] (ns); an object's [size, time, ETag or content id]. A
    missing file is [None, None].

    The change time and inode catch a rewrite that keeps the size and puts the old
    modification time back (`touch -r`, `os.utime`): every write, `utime` and rename sets
    a file's change time to now, and no call sets it back. An object store's ETag (or a
    Hub file's blob id) names the content. Hashing the content itself would cost a read
    of all input at every start and resume (The Stack dedup is ~3 TB)."""
    if "://" not in path:
        try:
            info = os.stat(path)
        except OSError:
            try:
                info = os.lstat(path)  # a dangling symlink: the link itself
            except OSError:
                return [None, None]
        return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
    from fsspec.core import url_to_fs

    fs, bare = url_to_fs(path)
    try:
        found = fs.info(bare)
    except (OSError, ValueError):
        return [None, None]
    when = next((found[k] for k in ("mtime", "LastModified", "last_modified", "updated",
                                    "ETag", "etag", "blob_id") if found.get(k)), None)
    content = next((found[k] for k in ("ETag", "etag", "blob_id", "sha256", "md5Hash")
                    if found.get(k)), None)
    return [found.get("size"), str(when) if when is not None else None,
            str(content) if content is not None else None]


def file_size(path: str) -> int:
    from fsspec.core import url_to_fs

    fs, bare = url_to_fs(path)
    return int(fs.size(bare) or 0)


def chunk_by(items: list[Any], sizes: list[int], max_items: int, max_bytes: int) -> list[list[Any]]:
    """Split items, in order, into runs of at most max_items and about max_bytes."""
    chunks: list[list[Any]] = []
    current: list[Any] = []
    current_bytes = 0
    for item, size in zip(items, sizes, strict=True):
        if current and (len(current) >= max_items or current_bytes + size > max_bytes):
            chunks.append(current)
            current, current_bytes = [], 0
        current.append(item)
        current_bytes += size
    if current:
        chunks.append(current)
    return chunks


__all__ = ["DOCUMENT_COLUMNS", "READ_SCHEMA", "InputUnit", "Reader", "ReaderError",
           "ReaderParams", "RowCollector", "SourceInfo", "bad_file_table", "chunk_by",
           "RowError", "coerce_field", "decode_bom", "decode_text", "document_id",
           "escape_surrogates", "expand_paths"]
