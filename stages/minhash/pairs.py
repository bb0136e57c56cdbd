"""Candidate pairs (a, b) of document keys: the files the buckets phase writes and the
verify and components phases read, and the sorted-unique helpers they share."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .. import storage

PAIR_SCHEMA = pa.schema([("a", pa.uint64()), ("b", pa.uint64())])


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique by sorting (numpy 2's hash-based np.unique is much slower here)."""
    values = np.sort(values)
    keep = np.ones(values.size, dtype=bool)
    keep[1:] = values[1:] != values[:-1]
    return values[keep]


def unique_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (a, b), sorted by a then b."""
    if a.size == 0:
        return a.astype(np.uint64), b.astype(np.uint64)
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    keep = np.ones(a.size, dtype=bool)
    keep[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[keep], b[keep]


def read_pairs(paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
    tables = [storage.read_parquet(p) for p in paths]
    table = pa.concat_tables(tables) if tables else PAIR_SCHEMA.empty_table()
    return unique_pairs(table.column("a").to_numpy(), table.column("b").to_numpy())


def write_pairs(path: str, a: np.ndarray, b: np.ndarray) -> None:
    storage.write_parquet_atomic(path, pa.table([pa.array(a, pa.uint64()),
                                                 pa.array(b, pa.uint64())], schema=PAIR_SCHEMA))
