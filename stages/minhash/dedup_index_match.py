"""MinHash against indexed runs (`against`): candidates from their indexes, and their
verification.

Semantics: an earlier run's index holds its kept documents and the duplicates it removed
in their favour (each names its kept representative). A document of this run that
shares a band bucket with one of them (and, with `verify`, has true Jaccard >= the
threshold with it) links to it; the `components` phase clusters this run's documents
with those links, and every document of a cluster that reaches an earlier document is
removed as `near_duplicate_of_earlier` (the earlier run's copy has shipped, so it is
the one that survives); the other clusters keep one document each as in any build.
That is the joint build's clustering, except for earlier clusters this run would join
together (the earlier run is never changed).

- In the `buckets` phase, band partition P also reads partition P of each earlier
  index (only the rows of P's bands): every document of this run in a bucket holding
  earlier documents is paired with the first `bucket_window` of them (by key).
- `verify_earlier` (per document partition of this run, with `verify`): this run's
  shingle sets of the partition, and the earlier sets of just the candidate keys, read
  by row group from the earlier index (dedup_index.py: `indexed_sets`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .. import storage
from ..dedup_index.format import IndexedRun
from .dedup_index import indexed_bands, indexed_sets
from .hashing import doc_partition
from .verify import SetIndex, jaccard_sorted, read_sets

EARLIER_PAIR_SCHEMA = pa.schema([("b", pa.uint64()), ("run", pa.uint16()), ("a", pa.uint64())])
EARLIER_EDGE_SCHEMA = pa.schema([("b", pa.uint64()), ("run", pa.uint16()), ("a", pa.uint64()),
                                 ("jaccard", pa.float64())])


def match_earlier(band: np.ndarray, bucket: np.ndarray, key: np.ndarray,
                  earlier: tuple[IndexedRun, ...], part: int, partitions: int,
                  window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (b, run, a): this run's document b shares a bucket with earlier document a
    of earlier run `run`; each b with at most `window` earlier documents per bucket."""
    bs, runs, as_ = [], [], []
    for run in earlier:
        old = indexed_bands(run, part, partitions)
        o_band = old.column("band").to_numpy()
        o_bucket = old.column("bucket").to_numpy()
        o_key = old.column("key").to_numpy()
        # One sort of both: within a (band, bucket), the earlier rows (flag 0) come first.
        all_band = np.concatenate([o_band.astype(np.uint16), band.astype(np.uint16)])
        all_bucket = np.concatenate([o_bucket, bucket])
        all_key = np.concatenate([o_key, key])
        flag = np.concatenate([np.zeros(o_key.size, np.int8), np.ones(key.size, np.int8)])
        order = np.lexsort((all_key, flag, all_bucket, all_band))
        all_band, all_bucket, all_key, flag = (all_band[order], all_bucket[order],
                                               all_key[order], flag[order])
        if all_key.size == 0:
            continue
        new_group = np.ones(all_key.size, dtype=bool)
        new_group[1:] = (all_band[1:] != all_band[:-1]) | (all_bucket[1:] != all_bucket[:-1])
        starts = np.flatnonzero(new_group)
        group = np.cumsum(new_group) - 1
        olds = np.bincount(group, weights=(flag == 0), minlength=starts.size).astype(np.int64)
        is_new = flag == 1
        first = starts[group]
        count = olds[group]
        for j in range(window):
            mine = is_new & (count > j)
            if not mine.any():
                break
            bs.append(all_key[mine])
            as_.append(all_key[first[mine] + j])
            runs.append(np.full(int(mine.sum()), run.number, dtype=np.uint16))
    if not bs:
        empty = np.zeros(0, dtype=np.uint64)
        return empty, np.zeros(0, dtype=np.uint16), empty
    b, r, a = np.concatenate(bs), np.concatenate(runs), np.concatenate(as_)
    order = np.lexsort((a, r, b))
    b, r, a = b[order], r[order], a[order]
    keep = np.ones(b.size, dtype=bool)
    keep[1:] = (b[1:] != b[:-1]) | (r[1:] != r[:-1]) | (a[1:] != a[:-1])
    return b[keep], r[keep], a[keep]


def write_earlier_pairs(paths: tuple[str, ...], b: np.ndarray, r: np.ndarray,
                        a: np.ndarray) -> None:
    part_of = doc_partition(b, len(paths))
    for part, path in enumerate(paths):
        mine = part_of == part
        storage.write_parquet_atomic(path, pa.table(
            [pa.array(b[mine], pa.uint64()), pa.array(r[mine], pa.uint16()),
             pa.array(a[mine], pa.uint64())], schema=EARLIER_PAIR_SCHEMA))


def read_earlier_pairs(paths: list[str]) -> pa.Table:
    """Distinct (b, run, a) [, jaccard] of the files, sorted."""
    tables = [storage.read_parquet(p) for p in paths]
    if not tables:
        return EARLIER_PAIR_SCHEMA.empty_table()
    table = pa.concat_tables(tables)
    b, r, a = (table.column(c).to_numpy() for c in ("b", "run", "a"))
    order = np.lexsort((a, r, b))
    table = table.take(pa.array(order, pa.int64()))
    b, r, a = b[order], r[order], a[order]
    keep = np.ones(b.size, dtype=bool)
    keep[1:] = (b[1:] != b[:-1]) | (r[1:] != r[:-1]) | (a[1:] != a[:-1])
    return table.filter(pa.array(keep))


@dataclass(frozen=True)
class CheckEarlier:
    pair_files: tuple[str, ...]  # earlier pairs of this document partition, every band part
    shingle_files: tuple[str, ...]  # this partition's own shingle sets, from every shard
    earlier: tuple[IndexedRun, ...]
    out_path: str
    threshold: float

    def outputs(self) -> tuple[str, ...]:
        return (self.out_path,)

    def __call__(self) -> dict[str, Any]:
        pairs = read_earlier_pairs(list(self.pair_files))
        b = pairs.column("b").to_numpy()
        run = pairs.column("run").to_numpy()
        a = pairs.column("a").to_numpy()
        scores = np.zeros(b.size, dtype=np.float64)
        if b.size:
            mine = SetIndex([read_sets(list(self.shingle_files), b)])
            for old in self.earlier:
                rows = np.flatnonzero(run == old.number)
                if rows.size == 0:
                    continue
                theirs = SetIndex([indexed_sets(old, a[rows])])
                scores[rows] = [jaccard_sorted(mine.get(x), theirs.get(y))
                                for x, y in zip(b[rows].tolist(), a[rows].tolist(), strict=True)]
        keep = scores >= self.threshold
        edges = pa.table([pa.array(b[keep], pa.uint64()), pa.array(run[keep], pa.uint16()),
                          pa.array(a[keep], pa.uint64()),
                          pa.array(scores[keep], pa.float64())], schema=EARLIER_EDGE_SCHEMA)
        storage.write_parquet_atomic(self.out_path, edges)
        return {"pairs": int(b.size), "verified": int(keep.sum())}


EARLIER_NODE = np.uint64(1 << 63)


def earlier_nodes(run: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Graph node ids of earlier documents, apart from this run's keys (< 2^63) and
    ordered by run, then key: run << 56 | key (earlier keys are < 2^56: shard index <
    2^24)."""
    return EARLIER_NODE | (run.astype(np.uint64) << np.uint64(56)) | key.astype(np.uint64)


def node_run_key(nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    run = ((nodes & ~EARLIER_NODE) >> np.uint64(56)).astype(np.int64)
    return run, nodes & np.uint64((1 << 56) - 1)
