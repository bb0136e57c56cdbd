"""The one document schema that flows between stages, and stable document ids."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import xxhash

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
    ]
)
DOCUMENT_COLUMNS = tuple(DOCUMENT_SCHEMA.names)
# Columns a source may map from its input (`columns:` in the manifest).
MAPPABLE_COLUMNS = ("text", "path", "repo", "license", "lang", "stars", "url")

REMOVED_EXTRA = pa.schema([pa.field("reason", pa.string(), nullable=False)])


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


def empty_documents() -> pa.Table:
    return DOCUMENT_SCHEMA.empty_table()


def doc_bytes(table: pa.Table) -> int:
    """UTF-8 bytes of the text column (what byte counts in stats mean)."""
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return 0
    return int(pc.sum(pc.binary_length(table.column("text"))).as_py() or 0)
