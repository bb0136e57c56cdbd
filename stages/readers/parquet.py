"""Parquet input (The Stack, RefinedWeb, any local or hf:// / s3:// glob).

Planning reads only the footers: files are cut into units of row ranges, so a
shard never depends on how many workers read it. Units are whole row groups
packed up to the shard limits, so no unit decodes rows that another one reads:
parquet can only be decoded from the start of a row group. Hub parquet often
holds more rows per row group than a shard: such a group is cut into even row
ranges, and a unit streams its range in record batches of `batch_rows` and stops
at its last row: memory stays near one batch and one data page per column (plus
the unit's own rows) whatever the row-group size.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from fsspec.core import url_to_fs
from pydantic import PositiveInt

from ..paths import LocalPath
from .common import (
    READ_SCHEMA,
    InputUnit,
    Reader,
    ReaderError,
    ReaderParams,
    RowError,
    bad_file_table,
    coerce_field,
    document_id,
    expand_paths,
)
from .where import RowFilter

# Document columns a source's `columns:` may fill from the file (besides text).
MAPPED_TARGETS = ("lang", "path", "repo", "license", "url", "stars", "license_type", "generated",
                  "vendor")


class ParquetParams(ReaderParams):
    type: Literal["parquet"]
    paths: list[LocalPath]
    """Files or glob patterns, local or fsspec URLs (hf://datasets/..., s3://...)."""
    where: RowFilter | None = None
    """Read only the rows whose field has one of the values (readers/where.py); row
    groups whose statistics rule them out are never read."""
    batch_rows: PositiveInt = 4096
    """Rows decoded at a time while reading a unit: bounds the reader's memory when row
    groups are larger than a shard (rows before the unit's range are decoded in batches
    of this size and dropped)."""


class ParquetReader(Reader[ParquetParams]):
    Params = ParquetParams

    def plan(self, max_docs: int, max_bytes: int) -> list[InputUnit]:
        units: list[InputUnit] = []
        for path, rel in expand_paths(self.params.paths, self.where):
            try:
                meta = _open(path).metadata
            except Exception as error:  # noqa: BLE001 - any unreadable footer is a bad file
                if self.source.on_bad_file == "fail":
                    raise ReaderError(f"{path}: not a readable parquet file ({error})") from error
                units.append(self._unit(len(units), path, rel, 0, 0, 0, bad=str(error)))
                continue
            groups = [(meta.row_group(i).num_rows, meta.row_group(i).total_byte_size)
                      for i in range(meta.num_row_groups)]
            for first, run in _runs_that_may_match(meta, groups, self.params.where):
                for start, count, size in row_ranges(run, max_docs, max_bytes):
                    units.append(self._unit(len(units), path, rel, first + start, count, size))
        return units

    def _unit(self, index: int, path: str, rel: str, start: int, count: int, size: int,
              bad: str | None = None) -> InputUnit:
        payload = {"path": path, "rel": rel, "start": start, "count": count, "bad": bad}
        return InputUnit(self.source.name, index, payload, count, size)

    def files(self, unit: InputUnit) -> list[str]:
        return [unit.payload["path"]]

    def read(self, unit: InputUnit) -> pa.Table:
        path, rel = unit.payload["path"], unit.payload["rel"]
        if unit.payload["bad"] is not None:
            return bad_file_table(self.source, rel, unit.payload["bad"])
        try:
            table = self._read_rows(path, unit.payload["start"], unit.payload["count"])
        except ReaderError:
            raise
        except Exception as error:  # noqa: BLE001 - a corrupt page, a truncated file
            if self.source.on_bad_file == "fail":
                raise ReaderError(f"{path}: cannot read rows ({error})") from error
            return bad_file_table(self.source, rel, f"rows {unit.payload['start']}+: {error}")
        positions = None
        if self.params.where is not None:  # skipped rows are not input: no id, no count
            mask = self.params.where.mask(table)
            positions = [unit.payload["start"] + i for i in
                         pc.indices_nonzero(mask).to_pylist()]
            table = table.filter(mask)
        return self._to_documents(table, rel, unit.payload["start"], path, positions)

    def _read_rows(self, path: str, start: int, count: int) -> pa.Table:
        handle = _open(path)
        wanted = self._input_columns(handle.schema_arrow, path)
        meta = handle.metadata
        groups, first_row, offset = [], 0, 0
        for i in range(meta.num_row_groups):
            n = meta.row_group(i).num_rows
            if offset + n > start and offset < start + count:
                first_row = offset if not groups else first_row
                groups.append(i)
            offset += n
        end, position = start + count, first_row
        batches: list[pa.RecordBatch] = []
        for batch in handle.iter_batches(batch_size=self.params.batch_rows, row_groups=groups,
                                         columns=wanted, use_threads=False):
            low, high = max(start, position), min(end, position + batch.num_rows)
            if high > low:
                batches.append(batch.slice(low - position, high - low))
            position += batch.num_rows
            if position >= end:  # the rest of the row group belongs to later units
                break
        if not batches:
            return handle.schema_arrow.empty_table().select(wanted)
        return pa.Table.from_batches(batches)

    def _input_columns(self, schema: pa.Schema, path: str) -> list[str]:
        mapping = {"text": "text", **self.source.columns}
        missing = [f"{source_col!r} (for {target})" for target, source_col in mapping.items()
                   if source_col not in schema.names]
        twice = [f"{source_col!r} (for {target}) appears {schema.names.count(source_col)} "
                 "times" for target, source_col in mapping.items()
                 if schema.names.count(source_col) > 1]
        if twice:  # which one is meant cannot be known: Arrow alone would refuse by name
            raise ReaderError(f"{path}: column {', '.join(twice)} in the file; a mapped "
                              f"column must be unique (source {self.source.name!r})")
        if missing:
            raise ReaderError(
                f"{path}: column {', '.join(missing)} not found in source "
                f"{self.source.name!r}; the file has columns {schema.names}. "
                f"Set sources[].columns to map them."
            )
        wanted = set(mapping.values())
        if self.params.where is not None:
            if self.params.where.top_column() not in schema.names:
                raise ReaderError(f"{path}: `where` field {self.params.where.field!r} not found "
                                  f"in source {self.source.name!r}; the file has columns "
                                  f"{schema.names}")
            wanted.add(self.params.where.top_column())
        return sorted(wanted)

    def _to_documents(self, table: pa.Table, rel: str, start: int, path: str,
                      positions: list[int] | None = None) -> pa.Table:
        n = table.num_rows
        mapping = {"text": "text", **self.source.columns}
        columns: dict[str, pa.Array] = {}
        reasons: list[str | None] = [None] * n
        text = table.column(mapping["text"]).combine_chunks()
        if pa.types.is_binary(text.type) or pa.types.is_large_binary(text.type):
            text, reasons = _decode_binary(text)
        elif not (pa.types.is_string(text.type) or pa.types.is_large_string(text.type)):
            raise ReaderError(f"{path}: text column {mapping['text']!r} has type {text.type}, "
                              "expected string")
        columns["text"] = pc.fill_null(text.cast(pa.large_string()), "")
        rows = positions if positions is not None else range(start, start + n)
        ids = [document_id(self.source.name, f"{rel}#{row}") for row in rows]
        columns["id"] = pa.array(ids, pa.string())
        columns["source"] = pa.array([self.source.name] * n, pa.string())
        columns["kind"] = pa.array([self.source.kind] * n, pa.string())
        details: list[str | None] = [None] * n
        for target in MAPPED_TARGETS:
            columns[target], bad = _mapped(table, target, mapping.get(target), n)
            for i, error in bad.items():  # a value its column cannot store: that row alone
                if reasons[i] is None:
                    reasons[i], details[i] = "invalid_field", f"{rel} row {rows[i]}: {error}"
        if self.source.lang and "lang" not in mapping:
            columns["lang"] = pa.array([self.source.lang] * n, pa.string())
        columns["reason"] = pa.array(reasons, pa.string())
        columns["detail"] = pa.array(details, pa.string())
        return pa.Table.from_pydict({name: columns[name] for name in READ_SCHEMA.names},
                                    schema=READ_SCHEMA)


def _runs_that_may_match(meta: pq.FileMetaData, groups: list[tuple[int, int]],
                         where: RowFilter | None) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """(first row, groups) of each run of consecutive row groups that may hold a row
    `where` takes: a group whose min/max statistics of the field leave out every value
    is skipped (the filter pushed down to the footer). Without `where`: the whole file."""
    if where is None:
        yield 0, groups
        return
    column = next((j for j in range(meta.num_columns)
                   if meta.schema.column(j).path == where.field), None)
    first, run, offset = 0, [], 0
    for i, group in enumerate(groups):
        if column is not None and _excluded(meta.row_group(i).column(column), where):
            if run:
                yield first, run
            run = []
        else:
            if not run:
                first = offset
            run.append(group)
        offset += group[0]
    if run:
        yield first, run


def _excluded(chunk: pq.ColumnChunkMetaData, where: RowFilter) -> bool:
    stats = chunk.statistics
    if stats is None or not stats.has_min_max:
        return False
    try:
        return not any(stats.min <= value <= stats.max for value in where.values)
    except TypeError:  # values of another type than the column: decide per row
        return False


def row_ranges(groups: list[tuple[int, int]], max_docs: int,
               max_bytes: int) -> Iterator[tuple[int, int, int]]:
    """(first row, rows, bytes) of each unit of a file whose row groups have these
    (rows, uncompressed bytes): consecutive whole groups up to `max_docs` and
    `max_bytes`; a group over either limit alone, cut into the fewest even row ranges
    that keep to both."""
    start = rows = size = 0
    for group_rows, group_bytes in groups:
        if not group_rows:
            continue
        if rows and (rows + group_rows > max_docs or size + group_bytes > max_bytes):
            yield start, rows, size
            start, rows, size = start + rows, 0, 0
        if group_rows > max_docs or group_bytes > max_bytes:
            pieces = min(group_rows, max(-(-group_rows // max_docs),
                                         -(-group_bytes // max(max_bytes, 1))))
            cuts = [group_rows * k // pieces for k in range(pieces + 1)]
            for low, high in pairwise(cuts):
                yield start + low, high - low, group_bytes * (high - low) // group_rows
            start += group_rows
        else:
            rows, size = rows + group_rows, size + group_bytes
    if rows:
        yield start, rows, size


# Column chunks are streamed through a buffer of this size (not pre-buffered whole, the
# pyarrow default), so reading a few batches of a huge row group reads only their pages.
_STREAM_BUFFER = 1 << 20


def _open(path: str) -> pq.ParquetFile:
    fs, bare = url_to_fs(path)
    return pq.ParquetFile(fs.open(bare, "rb"), pre_buffer=False, buffer_size=_STREAM_BUFFER)


def _mapped(table: pa.Table, target: str, column: str | None, n: int,
            ) -> tuple[pa.Array, dict[int, str]]:
    """Document column `target` from input `column`, and the rows whose value it cannot
    store, each with why (a `stars` of "x", of 2**64 in a uint64 column, a struct `repo`).

    Arrow's checked cast first (one call for a column of the right type); where it
    refuses, each value goes through the readers' shared `coerce_field`, so a bad value
    costs its row and never becomes a silent -1 or "b'...'"."""
    target_type = READ_SCHEMA.field(target).type
    if column is None:
        return pa.nulls(n, target_type), {}
    values = table.column(column).combine_chunks()
    if not (pa.types.is_list(values.type) or pa.types.is_large_list(values.type)):
        try:
            return values.cast(target_type, safe=True), {}
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
    # a list (The Stack's licenses: comma-joined without nulls), or values to check one by one
    out: list[object] = []
    bad: dict[int, str] = {}
    for i, value in enumerate(values.to_pylist()):
        try:
            out.append(coerce_field(target, column, value))
        except RowError as error:
            out.append(None)
            bad[i] = str(error)
    return pa.array(out, target_type), bad


def _decode_binary(values: pa.Array) -> tuple[pa.Array, list[str | None]]:
    texts, reasons = [], []
    for raw in values.to_pylist():
        raw = raw or b""
        try:
            texts.append(raw.decode("utf-8"))
            reasons.append(None)
        except UnicodeDecodeError:
            texts.append(raw.decode("utf-8", "replace"))
            reasons.append("invalid_utf8")
    return pa.array(texts, pa.large_string()), reasons
