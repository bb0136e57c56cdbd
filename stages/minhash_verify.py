"""Phases `verify_ship` and `verify_check`: true Jaccard of candidate pairs, bounded memory.

Shingle sets live split by document partition (written by `signatures`). A pair
(a, b) needs both sets in one task, so verification is a two-step shuffle:

1. ship (task per partition q of a): read the pairs whose `a` is in q and q's
   shingle sets; for each partition q' of `b`, write those pairs and the sets
   of their `a` documents (each set once per q', not once per pair).
2. check (task per partition q of b): read what every ship task sent to q
   plus q's own shingle sets, compute |A & B| / |A | B|, keep pairs at or
   above the threshold as edges.

Each task holds about 1/partitions of the candidate documents' sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lemur_data.stages import storage
from lemur_data.stages.minhash_buckets import read_pairs, sorted_unique, write_pairs
from lemur_data.stages.minhash_shard import SHINGLE_SCHEMA
from lemur_data.stages.minhash_signatures import doc_partition

EDGE_SCHEMA = pa.schema([("a", pa.uint64()), ("b", pa.uint64()), ("jaccard", pa.float64())])


def read_sets(paths: list[str], keys: np.ndarray) -> pa.Table:
    """Rows (key, hashes) of the wanted keys, sorted by key."""
    wanted = pa.array(sorted_unique(keys), pa.uint64())
    tables = []
    for path in paths:
        table = storage.read_parquet(path)
        tables.append(table.filter(pc.is_in(table.column("key"), wanted)))
    table = pa.concat_tables(tables) if tables else SHINGLE_SCHEMA.empty_table()
    return table.sort_by("key")


class SetIndex:
    """Shingle set of a key, from a (key, hashes) table sorted by key."""

    def __init__(self, table: pa.Table) -> None:
        self.keys = table.column("key").to_numpy()
        lists = table.column("hashes").combine_chunks() if table.num_rows else \
            pa.array([], pa.list_(pa.uint32()))
        self.offsets = lists.offsets.to_numpy()
        self.values = lists.values.to_numpy()

    def get(self, key: int) -> np.ndarray:
        i = int(np.searchsorted(self.keys, key))
        return self.values[self.offsets[i]:self.offsets[i + 1]]


def jaccard_sorted(x: np.ndarray, y: np.ndarray) -> float:
    if x.size == 0 or y.size == 0:
        return 0.0
    if x.size > y.size:
        x, y = y, x
    at = np.searchsorted(y, x)
    common = int((y[np.minimum(at, y.size - 1)] == x).sum())
    return common / (x.size + y.size - common)


@dataclass(frozen=True)
class ShipSets:
    pair_files: tuple[str, ...]  # pairs/<band part>/qa-q.parquet
    shingle_files: tuple[str, ...]  # shingles/<shard>/part-q.parquet
    out_dir: str
    partitions: int

    def __call__(self) -> dict[str, Any]:
        a, b = read_pairs(list(self.pair_files))
        sets = read_sets(list(self.shingle_files), a)
        to = doc_partition(b, self.partitions)
        shipped = 0
        for part in range(self.partitions):
            mine = to == part
            write_pairs(storage.join(self.out_dir, f"pairs-{part:04d}.parquet"), a[mine], b[mine])
            needed = pa.array(sorted_unique(a[mine]), pa.uint64())
            chosen = sets.filter(pc.is_in(sets.column("key"), needed))
            shipped += chosen.num_rows
            storage.write_parquet_atomic(storage.join(self.out_dir, f"sets-{part:04d}.parquet"),
                                         chosen)
        return {"pairs": int(a.size), "sets_shipped": shipped}


@dataclass(frozen=True)
class CheckPairs:
    pair_files: tuple[str, ...]  # verify/from-*/pairs-q.parquet
    shipped_files: tuple[str, ...]  # verify/from-*/sets-q.parquet
    shingle_files: tuple[str, ...]  # shingles/<shard>/part-q.parquet
    out_path: str
    threshold: float

    def __call__(self) -> dict[str, Any]:
        a, b = read_pairs(list(self.pair_files))
        shipped = [storage.read_parquet(p) for p in self.shipped_files]
        left = SetIndex((pa.concat_tables(shipped) if shipped
                         else SHINGLE_SCHEMA.empty_table()).sort_by("key"))
        right = SetIndex(read_sets(list(self.shingle_files), b))
        scores = np.array([jaccard_sorted(left.get(x), right.get(y))
                           for x, y in zip(a.tolist(), b.tolist(), strict=True)], dtype=np.float64)
        keep = scores >= self.threshold
        edges = pa.table([pa.array(a[keep], pa.uint64()), pa.array(b[keep], pa.uint64()),
                          pa.array(scores[keep], pa.float64())], schema=EDGE_SCHEMA)
        storage.write_parquet_atomic(self.out_path, edges)
        return {"pairs": int(a.size), "verified": int(keep.sum())}
