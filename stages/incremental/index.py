"""The dedup index of a finished run: where its files are, what `index.json` says, and the
checks a later run makes before it deduplicates against it.

A run's index (`<run>/index/`) holds what a later run needs to find duplicates of the
run's KEPT documents (those in its final output shards), partitioned as the run's own
dedup work was, so a later task reads only its partition:

- `exact/part-PPPP.parquet`: (hash, id), sorted by hash; partition = exact_dedup's
  (first 32 bits of the hash mod its `partitions`).
- `minhash/bands/part-PPPP.parquet`: (band, bucket, key), sorted; bands with
  band % partitions == P, as the signatures phase splits them.
- `minhash/docs/part-QQQQ.parquet`: (key, id), sorted by key; document partition Q.
- `minhash/shingles/part-QQQQ.parquet`: (key, hashes) sorted by key, in small row groups,
  so verification reads only the row groups holding candidate keys.
- `index.json`: the format version, the dedup parameters, document counts; written
  last, so its presence means the index is complete.

Earlier runs are only ever read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import storage

INDEX_FORMAT = 1
# The MinHash parameters that decide band buckets and shingles: an earlier index is
# usable only when every one equals the new run's.
MINHASH_KEYS = ("seed", "permutations", "bands", "rows", "ngram", "tokenizer", "scheme",
                "backend")
EXACT_KEYS = ("normalize",)
SET_ROW_GROUP = 256  # shingle-set rows per row group: a candidate costs ~256 sets to read


class EarlierRunError(Exception):
    """An `against` run that cannot be used: no index, another format, other parameters."""


def _part(i: int) -> str:
    return f"part-{i:04d}.parquet"


@dataclass(frozen=True)
class IndexFiles:
    run_dir: str

    @property
    def root(self) -> str:
        return storage.join(self.run_dir, "index")

    def manifest(self) -> str:
        return storage.join(self.root, "index.json")

    def kept_ids(self) -> str:
        """The ids of the run's kept documents (an intermediate of building the index)."""
        return storage.join(self.root, "kept-ids.parquet")

    def exact(self, part: int) -> str:
        return storage.join(self.root, "exact", _part(part))

    def bands(self, part: int) -> str:
        return storage.join(self.root, "minhash", "bands", _part(part))

    def docs(self, part: int) -> str:
        return storage.join(self.root, "minhash", "docs", _part(part))

    def shingles(self, part: int) -> str:
        return storage.join(self.root, "minhash", "shingles", _part(part))


@dataclass(frozen=True)
class Earlier:
    """One `against` run as a later run's tasks need it (picklable, small)."""

    run: str  # as written in the manifest (resolved): what details and stats name
    number: int  # position in `against`: the first listed wins a document matched twice
    partitions: int  # the earlier run's own partition count for this index section
    docs: int

    @property
    def files(self) -> IndexFiles:
        return IndexFiles(self.run)

    def parts_for(self, part: int, partitions: int) -> list[int]:
        """The earlier partitions that can hold rows of the later run's partition `part`
        (of `partitions`): both split the same value by modulo, so those congruent to
        `part` modulo gcd. One partition when the counts match."""
        g = int(np.gcd(partitions, self.partitions))
        return [q for q in range(self.partitions) if q % g == part % g]


def read_index(run: str) -> dict[str, Any]:
    files = IndexFiles(run)
    if not storage.exists(files.manifest()):
        raise EarlierRunError(
            f"against: {run} has no dedup index ({files.manifest()} is missing); build it "
            f"with `lemur-data index --run-dir {run}`, or set `index: true` on that run's "
            "dedup stage")
    index = storage.read_json(files.manifest())
    if index.get("format") != INDEX_FORMAT:
        raise EarlierRunError(
            f"against: {run}: its index has format {index.get('format')}, this lemur-data reads "
            f"format {INDEX_FORMAT}; rebuild it with `lemur-data index --run-dir {run}`")
    return index


def earlier_runs(runs: list[str], section: str, expected: dict[str, Any]) -> list[Earlier]:
    """Check each run's index `section` (exact | minhash) against the new run's parameters;
    refuse naming the first parameter that differs."""
    out = []
    for number, run in enumerate(runs):
        index = read_index(run)
        params = index.get(section)
        if params is None:
            raise EarlierRunError(f"against: {run} has no {section} index (that run had no "
                                  f"{'exact_dedup' if section == 'exact' else 'minhash'} stage)")
        for key, value in expected.items():
            if params.get(key) != value:
                hint = (f" (bands x rows follow threshold and verify unless given: set "
                        f"minhash bands: {params.get('bands')}, rows: {params.get('rows')})"
                        if key in ("bands", "rows") else "")
                raise EarlierRunError(
                    f"against: {run}: {section} parameter {key!r} differs: the earlier index "
                    f"has {params.get(key)!r}, this run {value!r}; they must match{hint}")
        out.append(Earlier(run, number, int(params["partitions"]), int(params["docs"])))
    return out


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
    import pyarrow.compute as pc

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
    import io

    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", compression_level=3,
                   row_group_size=SET_ROW_GROUP, write_statistics=True)
    storage.write_bytes_atomic(path, sink.getvalue())
