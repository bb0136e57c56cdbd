"""A local copy of The Stack v2 laid out as its dataset card says, for tests and benchmarks.

Metadata: `data/<Language>/train-00000-of-00001.parquet` with the card's columns and
types (bigcode/the-stack-v2-dedup); contents: one gzip object per blob at
`content/<blob_id>` in a bucket named `softwareheritage` on an S3-compatible server,
blob ids being Software Heritage's sha1_git of the bytes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

BUCKET = "softwareheritage"

STACK_V2_SCHEMA = pa.schema([
    ("blob_id", pa.string()), ("directory_id", pa.string()), ("path", pa.string()),
    ("content_id", pa.string()), ("detected_licenses", pa.list_(pa.string())),
    ("license_type", pa.string()), ("repo_name", pa.string()), ("snapshot_id", pa.string()),
    ("revision_id", pa.string()), ("branch_name", pa.string()),
    ("visit_date", pa.timestamp("ns")), ("revision_date", pa.timestamp("ns")),
    ("committer_date", pa.timestamp("ns")), ("github_id", pa.int64()),
    ("star_events_count", pa.int64()), ("fork_events_count", pa.int64()),
    ("gha_license_id", pa.string()), ("gha_event_created_at", pa.timestamp("ns")),
    ("gha_created_at", pa.timestamp("ns")), ("gha_language", pa.string()),
    ("src_encoding", pa.string()), ("language", pa.string()), ("is_vendor", pa.bool_()),
    ("is_generated", pa.bool_()), ("length_bytes", pa.int64()), ("extension", pa.string()),
])


def sha1_git(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


@dataclass
class StackV2Row:
    text: str
    path: str
    repo: str
    encoding: str = "UTF-8"
    generated: bool = False
    vendor: bool = False
    licenses: tuple[str, ...] = ("MIT",)
    stars: int = 1
    upload: str = "gzip"
    """gzip (as the bucket holds it), missing (no object) or corrupt (not gzip)."""

    @property
    def raw(self) -> bytes:
        return self.text.encode(self.encoding)

    @property
    def blob_id(self) -> str:
        return sha1_git(self.raw)


def write_metadata(path: Path, rows: list[StackV2Row], language: str,
                   row_group_size: int = 8) -> pa.Table:
    when = dt.datetime(2023, 9, 6, 12, 0, 0)
    data: dict[str, list[Any]] = {name: [] for name in STACK_V2_SCHEMA.names}
    for i, row in enumerate(rows):
        values = {
            "blob_id": row.blob_id, "directory_id": sha1_git(row.path.encode()),
            "path": "/" + row.path, "content_id": hashlib.sha1(row.raw).hexdigest(),
            "detected_licenses": list(row.licenses),
            "license_type": "permissive" if row.licenses else "no_license",
            "repo_name": row.repo, "snapshot_id": sha1_git(row.repo.encode()),
            "revision_id": sha1_git(b"rev" + row.repo.encode()), "branch_name": "refs/heads/main",
            "visit_date": when, "revision_date": when, "committer_date": when,
            "github_id": 1000 + i, "star_events_count": row.stars, "fork_events_count": 0,
            "gha_license_id": None, "gha_event_created_at": None, "gha_created_at": None,
            "gha_language": language, "src_encoding": row.encoding, "language": language,
            "is_vendor": row.vendor, "is_generated": row.generated,
            "length_bytes": len(row.raw), "extension": row.path.rsplit(".", 1)[-1],
        }
        for name in data:
            data[name].append(values[name])
    table = pa.Table.from_pydict(data, schema=STACK_V2_SCHEMA)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)
    return table


def upload_blobs(client: Any, rows: list[StackV2Row]) -> None:
    """The blobs into the bucket as Software Heritage stores them (gzip, by blob id)."""
    with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
        client.create_bucket(Bucket=BUCKET)
    for row in rows:
        if row.upload == "missing":
            continue
        body = gzip.compress(row.raw, mtime=0) if row.upload == "gzip" else row.raw
        client.put_object(Bucket=BUCKET, Key=f"content/{row.blob_id}", Body=body)
