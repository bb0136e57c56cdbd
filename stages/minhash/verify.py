"""Phases `verify_ship` and `verify_check`: true Jaccard of candidate pairs, bounded memory.

Shingle sets live split by document partition (written by `signatures`). A pair
(a, b) needs both sets in one task, so verification is a two-step shuffle:

1. ship (task per partition q of a): read the pairs whose `a` is in q and q's
   shingle sets; for each partition q' of `b`, write those pairs and the sets
   of their `a` documents (each set once per q', not once per pair).
2. check (task per partition q of b): hold q's own shingle sets, then read what
   each ship task sent to q, one sender at a time, compute |A & B| / |A | B|,
   keep pairs at or above the threshold as edges.

A ship task holds 1/partitions of the candidate documents' sets, a check task
2/partitions: a set shipped to every partition (a document with near duplicates
everywhere) is held by each check task once, never all copies together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import storage
from .hashing import doc_partition
from .pairs import read_pairs, sorted_unique, write_pairs
from .signatures import SHINGLE_SCHEMA

EDGE_SCHEMA = pa.schema([("a", pa.uint64()), ("b", pa.uint64()), ("jaccard", pa.float64())])


def read_sets(paths: list[str], keys: np.ndarray) -> pa.Table:
    """Rows (key, hashes) of the wanted keys, in file order (not sorted: see SetIndex).

    Each file is filtered as it is read, so at most one file's unwanted rows are held.
    """
    wanted = pa.array(sorted_unique(keys), pa.uint64())
    tables = []
    for path in paths:
        table = storage.read_parquet(path)
        tables.append(table.filter(pc.is_in(table.column("key"), wanted)))
    return pa.concat_tables(tables) if tables else SHINGLE_SCHEMA.empty_table()


class SetIndex:
    """Shingle sets by key, read in place from the record batches of (key, hashes) tables.

    Only the keys are sorted (an argsort over 8-byte keys); the sets stay where parquet
    decoded them, never concatenated or copied, so an index costs the sets once.
    """

    def __init__(self, tables: list[pa.Table]) -> None:
        self.offsets: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        keys, batch_of, rows = [], [], []
        for table in tables:
            for batch in table.to_batches():
                if batch.num_rows == 0:
                    continue
                lists = batch.column("hashes")
                self.offsets.append(lists.offsets.to_numpy())
                self.values.append(lists.values.to_numpy())
                keys.append(batch.column("key").to_numpy())
                batch_of.append(np.full(batch.num_rows, len(self.values) - 1, dtype=np.int32))
                rows.append(np.arange(batch.num_rows, dtype=np.int64))
        all_keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.uint64)
        order = np.argsort(all_keys, kind="stable")
        self.keys = all_keys[order]
        self.batch = np.concatenate(batch_of)[order] if keys else np.zeros(0, dtype=np.int32)
        self.row = np.concatenate(rows)[order] if keys else np.zeros(0, dtype=np.int64)

    def positions(self, keys: np.ndarray) -> np.ndarray:
        """Index of each (present) key in `self.keys`."""
        return np.searchsorted(self.keys, keys)

    def get(self, key: int) -> np.ndarray:
        i = int(np.searchsorted(self.keys, key))
        batch, row = int(self.batch[i]), int(self.row[i])
        offsets = self.offsets[batch]
        return self.values[batch][offsets[row]:offsets[row + 1]]


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
    pair_files: tuple[str, ...]  # pairs of this partition q, from every band partition
    shingle_files: tuple[str, ...]  # this partition's shingle sets, from every shard
    pairs_out: tuple[str, ...]  # by destination (b's partition)
    sets_out: tuple[str, ...]  # the same order

    def outputs(self) -> tuple[str, ...]:
        return (*self.pairs_out, *self.sets_out)

    def __call__(self) -> dict[str, Any]:
        a, b = read_pairs(list(self.pair_files))
        sets = read_sets(list(self.shingle_files), a)
        keys = sets.column("key").to_numpy()
        by_key = np.argsort(keys, kind="stable")
        to = doc_partition(b, len(self.pairs_out))
        shipped = 0
        for part, (pairs_path, sets_path) in enumerate(
                zip(self.pairs_out, self.sets_out, strict=True)):
            mine = to == part
            write_pairs(pairs_path, a[mine], b[mine])
            # The sets of this destination's `a` documents, by key; one copy, of them only.
            needed = sorted_unique(a[mine])
            at = np.searchsorted(keys, needed, sorter=by_key)
            found = at < keys.size
            found[found] = keys[by_key[at[found]]] == needed[found]
            chosen = sets.take(pa.array(by_key[at[found]], pa.int64()))
            shipped += chosen.num_rows
            storage.write_parquet_atomic(sets_path, chosen)
            del chosen
        return {"pairs": int(a.size), "sets_shipped": shipped}


@dataclass(frozen=True)
class CheckPairs:
    pair_files: tuple[str, ...]  # pairs shipped to this partition q, by sender
    shipped_files: tuple[str, ...]  # the sets shipped with them, the same order
    shingle_files: tuple[str, ...]  # this partition's own shingle sets, from every shard
    out_path: str
    threshold: float

    def outputs(self) -> tuple[str, ...]:
        return (self.out_path,)

    def __call__(self) -> dict[str, Any]:
        """One source partition at a time: this task holds its own documents' sets and
        one sender's, about 2/partitions of the candidates, however often the senders
        shipped a set (a document with near duplicates in every partition is sent to
        every one of them)."""
        _, b_all = read_pairs(list(self.pair_files))
        right = SetIndex([read_sets(list(self.shingle_files), b_all)])
        del b_all
        parts_a, parts_b, parts_score = [], [], []
        for pair_file, shipped_file in zip(self.pair_files, self.shipped_files, strict=True):
            a, b = read_pairs([pair_file])
            if a.size == 0:
                continue
            left = SetIndex([storage.read_parquet(shipped_file)])
            parts_score.append(np.array(
                [jaccard_sorted(left.get(x), right.get(y))
                 for x, y in zip(a.tolist(), b.tolist(), strict=True)], dtype=np.float64))
            parts_a.append(a)
            parts_b.append(b)
            del left
        a = np.concatenate(parts_a) if parts_a else np.zeros(0, dtype=np.uint64)
        b = np.concatenate(parts_b) if parts_b else np.zeros(0, dtype=np.uint64)
        scores = np.concatenate(parts_score) if parts_score else np.zeros(0, dtype=np.float64)
        order = np.lexsort((b, a))  # senders' pairs are disjoint: sorted as one read
        a, b, scores = a[order], b[order], scores[order]
        keep = scores >= self.threshold
        edges = pa.table([pa.array(a[keep], pa.uint64()), pa.array(b[keep], pa.uint64()),
                          pa.array(scores[keep], pa.float64())], schema=EDGE_SCHEMA)
        storage.write_parquet_atomic(self.out_path, edges)
        return {"pairs": int(a.size), "verified": int(keep.sum())}
