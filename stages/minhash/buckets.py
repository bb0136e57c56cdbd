"""Phase `buckets`: one task per band partition finds candidate pairs.

Documents sharing a (band, bucket) are candidates. Pairs come from the bucket
sorted by document key, each member paired with its next `window` members:
every pair for small buckets, a linear number of pairs (still one connected
group) for large ones, so a bucket of a million copies cannot explode into
10^12 pairs. Output: distinct pairs (a < b), split by the document partition
of `a` for the verify or components phase.

Against earlier runs (`earlier`), the task also pairs this run's documents with the
earlier kept documents sharing their buckets (dedup_index_match.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .. import storage
from ..dedup_index.format import IndexedRun
from .dedup_index_match import match_earlier, write_earlier_pairs
from .hashing import doc_partition
from .pairs import unique_pairs, write_pairs


@dataclass(frozen=True)
class BucketPartition:
    inputs: tuple[str, ...]  # this band partition's file of every shard
    pairs_out: tuple[str, ...]  # the pairs, one file per document partition of a
    window: int
    part: int = 0  # this band partition
    earlier: tuple[IndexedRun, ...] = ()
    earlier_out: tuple[str, ...] = ()  # candidates against earlier runs, by b's partition

    def outputs(self) -> tuple[str, ...]:
        return (*self.pairs_out, *self.earlier_out)

    def __call__(self) -> dict[str, Any]:
        tables = [storage.read_parquet(path) for path in self.inputs]
        table = pa.concat_tables(tables) if tables else None
        summary: dict[str, Any] = {}
        if table is None or table.num_rows == 0:
            a = b = np.zeros(0, dtype=np.uint64)
            multi = 0
            sorted_rows = (np.zeros(0, np.uint16), np.zeros(0, np.uint64), a)
        else:
            band = table.column("band").to_numpy()
            bucket = table.column("bucket").to_numpy()
            key = table.column("key").to_numpy()
            order = np.lexsort((key, bucket, band))
            band, bucket, key = band[order], bucket[order], key[order]
            sorted_rows = (band, bucket, key)
            group = np.zeros(key.size, dtype=np.int64)
            group[1:] = np.cumsum((band[1:] != band[:-1]) | (bucket[1:] != bucket[:-1]))
            sizes = np.bincount(group)
            multi = int((sizes > 1).sum())
            firsts, seconds = [], []
            for step in range(1, self.window + 1):
                same = group[step:] == group[:-step]
                if not same.any():
                    break
                firsts.append(key[:-step][same])
                seconds.append(key[step:][same])
            a, b = unique_pairs(np.concatenate(firsts) if firsts else np.zeros(0, np.uint64),
                                np.concatenate(seconds) if seconds else np.zeros(0, np.uint64))
        part_of = doc_partition(a, len(self.pairs_out))
        for part, path in enumerate(self.pairs_out):
            mine = part_of == part
            write_pairs(path, a[mine], b[mine])
        if self.earlier_out:
            new, run, old = match_earlier(*sorted_rows, self.earlier, self.part,
                                          len(self.pairs_out), self.window)
            write_earlier_pairs(self.earlier_out, new, run, old)
            summary["earlier_pairs"] = int(new.size)
        return {"band_rows": 0 if table is None else table.num_rows, "shared_buckets": multi,
                "pairs": int(a.size), **summary}
