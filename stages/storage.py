"""The shared I/O of every stage: the document schema and ids, and atomic reads and
writes of run files (parquet shards, JSON, markers) through fsspec (local, s3://,
gs://, hf://).

Every write goes to a temporary name in the same folder and is then renamed,
so a killed task leaves either the old state or the complete new file.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

# Columns every document has. Stages append their own columns after these.
DOCUMENT_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("text", pa.large_string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("lang", pa.string()),
        pa.field("path", pa.string()),
        pa.field("repo", pa.string()),
        pa.field("license", pa.string()),
        pa.field("stars", pa.int64()),
        pa.field("url", pa.string()),
        # What a dataset already says about a file (The Stack v2's license_type,
        # is_generated, is_vendor), so the licences, quality and keep-order rules use it
        # instead of guessing; null where a source does not say.
        pa.field("license_type", pa.string()),
        pa.field("generated", pa.bool_()),
        pa.field("vendor", pa.bool_()),
    ]
)
DOCUMENT_COLUMNS = tuple(DOCUMENT_SCHEMA.names)
# Columns a source may map from its input (`columns:` in the manifest).
MAPPABLE_COLUMNS = ("text", "path", "repo", "license", "lang", "stars", "url", "license_type",
                    "generated", "vendor")


class _NoPandas:
    """A meta path finder for which pandas does not exist."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas hidden from pyarrow's probe", name=name)


def skip_pandas_probe() -> None:
    """Spare this process pyarrow's import of pandas (~0.33 s of CPU; once per process).

    `pa.array` of a Python list first asks whether the list is a pandas object, and to
    ask it imports pandas (pyarrow's `_is_array_like`, `pandas_api._have_pandas_internal`):
    every Ray worker paid that at its first table. Nothing in a task hands pyarrow a
    pandas object, so one probe runs with pandas hidden: pyarrow records "no pandas"
    and stops asking. A later `to_pandas()` still imports pandas (pyarrow retries then).
    """
    if "pandas" in sys.modules:
        return
    hidden = _NoPandas()
    sys.meta_path.insert(0, hidden)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(hidden)


def document_id(source: str, locator: str) -> str:
    """Stable id from the source name and where the document sits in its input.

    `locator` is a path, `path#row` or `file@offset`: never the run order, so the
    id survives resharding, reruns and any number of workers.
    """
    return xxhash.xxh3_128_hexdigest(f"{source}\x00{locator}".encode())


def documents_table(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Build a table with exactly the document schema from row dicts."""
    columns: dict[str, list[Any]] = {name: [] for name in DOCUMENT_COLUMNS}
    for row in rows:
        for name in DOCUMENT_COLUMNS:
            columns[name].append(row.get(name))
    return pa.Table.from_pydict(columns, schema=DOCUMENT_SCHEMA)


def doc_bytes(table: pa.Table) -> int:
    """UTF-8 bytes of the text column (what byte counts in stats mean)."""
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return 0
    return int(pc.sum(pc.binary_length(table.column("text"))).as_py() or 0)


# Fixed writer options: together with a deterministic table they give
# byte-identical files on every run.
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "row_group_size": 8192,
    "write_statistics": True,
    "use_dictionary": ["source", "kind", "lang", "reason", "repo", "license"],
}


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *[p.strip("/") for p in parts]])


def filesystem(path: str) -> tuple[fsspec.AbstractFileSystem, str]:
    return url_to_fs(path)


def exists(path: str) -> bool:
    fs, p = filesystem(path)
    return fs.exists(p)


def makedirs(path: str) -> None:
    fs, p = filesystem(path)
    fs.makedirs(p, exist_ok=True)


def write_bytes_atomic(path: str, data: bytes) -> None:
    fs, p = filesystem(path)
    parent = p.rsplit("/", 1)[0]
    fs.makedirs(parent, exist_ok=True)
    tmp = f"{parent}/.tmp-{uuid.uuid4().hex}-{p.rsplit('/', 1)[-1]}"
    try:
        with fs.open(tmp, "wb") as handle:
            handle.write(data)
    except OSError as error:
        # A full disk says only "[Errno 28] No space left on device": name the file, and
        # drop the partial temporary so it does not hold the space.
        with contextlib.suppress(OSError):
            fs.rm(tmp)
        if error.filename is not None:
            raise
        raise OSError(error.errno, f"{error.strerror} (writing {len(data):,} bytes)",
                      path) from error
    if isinstance(fs, LocalFileSystem):
        os.replace(tmp, p)
    else:
        fs.mv(tmp, p)


def write_parquet_atomic(path: str, table: pa.Table, **overrides: Any) -> None:
    """`overrides` replace writer options, e.g. `compression="lz4"` for a work file
    that is written and read once (zstd costs more there than it saves)."""
    sink = io.BytesIO()
    pq.write_table(table, sink, **{**_options_for(table), **overrides})
    write_bytes_atomic(path, sink.getvalue())


def write_parquet_groups_atomic(path: str, tables: list[pa.Table], schema: pa.Schema,
                                **overrides: Any) -> None:
    """One row group per table, so a reader filtering on a column that is constant per
    group (a shard id) skips the others by their statistics."""
    sink = io.BytesIO()
    options = {k: v for k, v in {**_options_for(schema.empty_table()), **overrides}.items()
               if k != "row_group_size"}
    with pq.ParquetWriter(sink, schema, **options) as writer:
        for table in tables:
            writer.write_table(table.cast(schema), row_group_size=max(table.num_rows, 1))
    write_bytes_atomic(path, sink.getvalue())


def _options_for(table: pa.Table) -> dict[str, Any]:
    options = dict(PARQUET_OPTIONS)
    options["use_dictionary"] = [c for c in options["use_dictionary"] if c in table.column_names]
    return options


def write_json_atomic(path: str, payload: Any) -> None:
    text = json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_bytes_atomic(path, text.encode())


def read_json(path: str) -> Any:
    fs, p = filesystem(path)
    with fs.open(p, "rb") as handle:
        return json.loads(handle.read())


def read_parquet(path: str, columns: list[str] | None = None) -> pa.Table:
    fs, p = filesystem(path)
    return pq.read_table(p, filesystem=fs, columns=columns)


def parquet_rows(path: str) -> int:
    """Rows of a parquet file, from its footer only."""
    fs, p = filesystem(path)
    return pq.read_metadata(p, filesystem=fs).num_rows


def parquet_columns(path: str) -> list[str]:
    """Column names of a parquet file, from its footer only."""
    fs, p = filesystem(path)
    return pq.read_schema(p, filesystem=fs).names


# The name `write_bytes_atomic` (and the Megatron writer) give a temporary file: only a
# name of this form is ever taken for one, so a user's own `.tmp-notes` stays.
_TEMPORARY = re.compile(r"\.tmp-[0-9a-f]{32}-")


def is_temporary(path: str) -> bool:
    """Whether `path` names the temporary file of an atomic write."""
    return _TEMPORARY.match(path.rstrip("/").rsplit("/", 1)[-1]) is not None


def remove_temporaries(folder: str, recursive: bool = True) -> int:
    """Delete the temp files of interrupted atomic writes in `folder` (and below it when
    `recursive`). Callers name only folders a run made (pipeline/build.py)."""
    fs, p = filesystem(folder)
    if not fs.isdir(p):
        return 0
    found = fs.find(p) if recursive else fs.ls(p, detail=False)
    stale = [f for f in found if is_temporary(f) and fs.isfile(f)]
    for path in stale:
        fs.rm(path)
    return len(stale)


def read_shard_rows(paths: list[str], shard_id: str, columns: list[str]) -> pa.Table:
    """The rows of a global stage's decision files that belong to one shard (their
    `shard` column): what an applier looks up. The filter skips row groups by their
    statistics, so a shard reads little more than its own rows."""
    import pyarrow.dataset as ds  # here: ~0.2 s to import (pandas), a cost for the driver

    fs, _ = filesystem(paths[0])
    local = [filesystem(path)[1] for path in paths]
    return ds.dataset(local, format="parquet", filesystem=fs).to_table(
        filter=ds.field("shard") == shard_id, columns=columns)


def list_files(folder: str, suffix: str = "") -> list[str]:
    """Sorted full paths of the files directly in `folder` ending with `suffix`."""
    fs, p = filesystem(folder)
    if not fs.exists(p):
        return []
    protocol = folder.split("://", 1)[0] + "://" if "://" in folder else ""
    names = [f for f in fs.ls(p, detail=False) if f.endswith(suffix)]
    return sorted(protocol + f if protocol and not f.startswith(protocol) else f for f in names
                  if not is_temporary(f))
