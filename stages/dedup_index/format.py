"""The dedup index of a finished run: where it is, what `index.json` says, and the checks a
later run makes before it deduplicates against it (`against:`).

A run's index (`<run>/index/`) holds what a later run needs to find duplicates of the
run's KEPT documents (those in its final output shards). Each dedup stage writes and
reads its own section, in its own module, partitioned as its work was so a later task
reads only its partition (exact_dedup: `exact/`, stages/exact_dedup.py; minhash:
`minhash/`, stages/minhash/dedup_index.py). This module holds what they share:

- `index.json`: the format version, the manifest and fingerprint of the run, the kept
  documents, and one section per dedup stage (its parameters and document counts);
  written last, so its presence means the index is complete;
- sorted files in small row groups read by key (`write_keyed`, `read_keyed`).

Indexed runs are only ever read here.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import storage

INDEX_FORMAT = 1
SET_ROW_GROUP = 256  # rows per row group of a keyed file: a candidate costs ~256 rows to read


class IndexedRunError(Exception):
    """An `against` run that cannot be used: no index, another format, other parameters."""


def part_file(i: int) -> str:
    return f"part-{i:04d}.parquet"


@dataclass(frozen=True)
class IndexFiles:
    run_dir: str

    @property
    def root(self) -> str:
        return storage.join(self.run_dir, "index")

    def manifest(self) -> str:
        return storage.join(self.root, "index.json")

    def section(self, name: str, *parts: str) -> str:
        """A file or folder of one stage's section (`exact`, `minhash`)."""
        return storage.join(self.root, name, *parts)


@dataclass(frozen=True)
class IndexedRun:
    """One `against` run as a later run's tasks need it (picklable, small)."""

    run: str  # as written in the manifest (resolved): what details and stats name
    number: int  # position in `against`: the first listed wins a document matched twice
    partitions: int  # the indexed run's own partition count for this index section
    docs: int

    @property
    def files(self) -> IndexFiles:
        return IndexFiles(self.run)

    def parts_for(self, part: int, partitions: int) -> list[int]:
        """The indexed partitions that can hold rows of the later run's partition `part`
        (of `partitions`): both split the same value by modulo, so those congruent to
        `part` modulo gcd. One partition when the counts match."""
        g = int(np.gcd(partitions, self.partitions))
        return [q for q in range(self.partitions) if q % g == part % g]


def read_index(run: str) -> dict[str, Any]:
    files = IndexFiles(run)
    if not storage.exists(files.manifest()):
        raise IndexedRunError(
            f"against: {run} has no dedup index ({files.manifest()} is missing); build it "
            f"with `lemur-data index --run-dir {run}`, or set `index: true` on that run's "
            "dedup stage")
    index = storage.read_json(files.manifest())
    if index.get("format") != INDEX_FORMAT:
        raise IndexedRunError(
            f"against: {run}: its index has format {index.get('format')}, this lemur-data reads "
            f"format {INDEX_FORMAT}; rebuild it with `lemur-data index --run-dir {run}`")
    return index


def index_sections(index: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The stages' sections of an index.json (the dicts beside the run's own keys)."""
    return {k: v for k, v in index.items() if isinstance(v, dict)}


def section_format(params: dict[str, Any]) -> int:
    """The version of a section's files (1: an index written before sections had one)."""
    return int(params.get("format", 1))


def indexed_runs(runs: list[str], section: str, expected: dict[str, Any],
                 stage: str, version: int = 1) -> list[IndexedRun]:
    """Check each run's index `section` against the new run's parameters; refuse naming
    the first parameter that differs. `stage`: the stage that writes the section, at
    `version` of its files (its `index_format`)."""
    out = []
    for number, run in enumerate(runs):
        index = read_index(run)
        params = index.get(section)
        if params is None:
            raise IndexedRunError(f"against: {run} has no {section} index (that run had no "
                                  f"{stage} stage)")
        if section_format(params) != version:
            raise IndexedRunError(
                f"against: {run}: its {section} index has format {section_format(params)}, "
                f"this lemur-data reads format {version}; rebuild it with "
                f"`lemur-data index --run-dir {run}`")
        for key, value in expected.items():
            if params.get(key) != value:
                hint = (f" (bands x rows follow threshold and verify unless given: set "
                        f"minhash bands: {params.get('bands')}, rows: {params.get('rows')})"
                        if key in ("bands", "rows") else "")
                raise IndexedRunError(
                    f"against: {run}: {section} parameter {key!r} differs: the earlier index "
                    f"has {params.get(key)!r}, this run {value!r}; they must match{hint}")
        out.append(IndexedRun(run, number, int(params["partitions"]), int(params["docs"])))
    return out


def folder_bytes(folder: str) -> int:
    fs, local = storage.filesystem(folder)
    return sum(fs.du(local, total=False).values()) if fs.exists(local) else 0


def against_notes(entry: dict[str, Any]) -> list[str]:
    """The card's note on a dedup stage that ran against earlier runs (its summary's
    `against`: documents removed per run)."""
    if not entry.get("against"):  # incremental curation (docs/incremental.md)
        return []
    return ["Deduplicated against earlier runs: " + "; ".join(
        f"`{a['run']}` ({a['removed']:,} documents removed)" for a in entry["against"]) + "."]


def groups_holding(metadata: pq.FileMetaData, key_column: int, keys: np.ndarray) -> list[int]:
    """Row groups whose key range (min/max statistics) can hold one of the sorted `keys`."""
    groups = []
    for g in range(metadata.num_row_groups):
        stats = metadata.row_group(g).column(key_column).statistics
        if stats is None or not stats.has_min_max:
            groups.append(g)
            continue
        lo = np.searchsorted(keys, np.uint64(stats.min), side="left")
        if lo < keys.size and keys[lo] <= np.uint64(stats.max):
            groups.append(g)
    return groups


def read_keyed(path: str, keys: np.ndarray, columns: list[str] | None = None) -> pa.Table:
    """Rows of a file sorted by `key` whose key is in `keys`, reading only the row groups
    whose key range can hold one (the file's statistics say which)."""
    fs, local = storage.filesystem(path)
    wanted = np.sort(keys.astype(np.uint64))
    with fs.open(local, "rb") as handle:
        reader = pq.ParquetFile(handle)
        groups = groups_holding(reader.metadata, reader.schema_arrow.get_field_index("key"),
                                wanted)
        if not groups:
            return reader.schema_arrow.empty_table().select(columns or reader.schema_arrow.names)
        table = reader.read_row_groups(groups, columns=columns)
    return table.filter(pc.is_in(table.column("key"), pa.array(wanted, pa.uint64())))


def write_keyed(path: str, table: pa.Table) -> None:
    """A table sorted by key, in small row groups for `read_keyed`."""
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", compression_level=3,
                   row_group_size=SET_ROW_GROUP, write_statistics=True)
    storage.write_bytes_atomic(path, sink.getvalue())
