"""Atomic reads and writes of run files through fsspec (local, s3://, gs://, hf://).

Every write goes to a temporary name in the same folder and is then renamed,
so a killed task leaves either the old state or the complete new file.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

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
    with fs.open(tmp, "wb") as handle:
        handle.write(data)
    if isinstance(fs, LocalFileSystem):
        os.replace(tmp, p)
    else:
        fs.mv(tmp, p)


def write_parquet_atomic(path: str, table: pa.Table) -> None:
    sink = io.BytesIO()
    pq.write_table(table, sink, **_options_for(table))
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


def remove_temporaries(folder: str) -> int:
    """Delete the temp files of interrupted atomic writes below `folder`."""
    fs, p = filesystem(folder)
    if not fs.exists(p):
        return 0
    stale = [f for f in fs.find(p) if f.rsplit("/", 1)[-1].startswith(".tmp-")]
    for path in stale:
        fs.rm(path)
    return len(stale)


def list_files(folder: str, suffix: str = "") -> list[str]:
    """Sorted full paths of the files directly in `folder` ending with `suffix`."""
    fs, p = filesystem(folder)
    if not fs.exists(p):
        return []
    protocol = folder.split("://", 1)[0] + "://" if "://" in folder else ""
    names = [f for f in fs.ls(p, detail=False) if f.endswith(suffix)]
    return sorted(protocol + f if protocol and not f.startswith(protocol) else f for f in names
                  if not f.rsplit("/", 1)[-1].startswith(".tmp-"))
