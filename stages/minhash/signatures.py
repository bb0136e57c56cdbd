"""Phase `signatures`: one task per input shard.

Writes, for the shard's in-scope documents:
- `bands/<shard>/part-PPPP.parquet`: (band, bucket, key) for the bands b with
  b % partitions == P, sorted: the buckets phase reads one part of every shard;
- `meta/<shard>.parquet`: (key, id, stars, license_rank, shingles): what choosing a
  keeper needs;
- with verification, `shingles/<shard>/part-QQQQ.parquet`: (key, sorted unique
  shingle hashes) for the documents of document partition Q.

A document key is shard_index << 32 | row: compact, fixed by the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...filters.minhash.shingles import Mode, batch_shingle_hashes, shingles
from .. import storage
from ..base import in_scope
from ..keeper import license_ranks
from .hashing import (
    band_buckets,
    datasketch_signatures,
    doc_partition,
    permutations,
    signatures,
)
from .params import MinHashParams

BAND_SCHEMA = pa.schema([("band", pa.uint16()), ("bucket", pa.uint64()), ("key", pa.uint64())])
META_SCHEMA = pa.schema([("key", pa.uint64()), ("id", pa.string()), ("stars", pa.int64()),
                         ("license_rank", pa.int8()), ("shingles", pa.int64())])
# `shingles`: distinct shingles with verification, else shingles with repeats.
SHINGLE_SCHEMA = pa.schema([("key", pa.uint64()), ("hashes", pa.list_(pa.uint32()))])


def doc_modes(kinds: list[str], tokenizer: str) -> list[Mode]:
    """Each document's shingle mode; `tokenizer` is MinhashParams.tokenizer (validated)."""
    if tokenizer != "auto":
        return [cast(Mode, tokenizer)] * len(kinds)
    return ["code" if kind == "code" else "words" for kind in kinds]


@dataclass(frozen=True)
class SignShard:
    shard_path: str
    shard_index: int
    shard_id: str
    params: MinHashParams
    seed: int
    bands_out: tuple[str, ...]  # one per band partition
    meta_out: str
    shingles_out: tuple[str, ...]  # one per document partition (empty without verify)

    def outputs(self) -> tuple[str, ...]:
        return (self.meta_out, *self.bands_out, *self.shingles_out)

    def __call__(self) -> dict[str, Any]:
        p = self.params
        table = storage.read_parquet(self.shard_path,
                                     ["id", "text", "source", "kind", "stars", "license",
                                      "license_type"])
        rows = np.flatnonzero(in_scope(table, p).to_numpy(zero_copy_only=False))
        docs = table if len(rows) == table.num_rows else table.take(pa.array(rows, pa.int64()))
        keys = (np.uint64(self.shard_index) << np.uint64(32)) | rows.astype(np.uint64)
        modes = doc_modes(docs.column("kind").to_pylist(), p.tokenizer)
        hashes, offsets = shingle_hashes(docs.column("text"), modes, p.ngram)
        total = int(hashes.size)
        signed = np.diff(offsets) > 0  # documents without any token take no part
        if p.verify:
            # Sets for verification; the minimum over a set is the minimum over its
            # multiset, so signatures are computed on the (shorter) sets too.
            hashes, offsets = unique_per_doc(hashes, offsets)
            self._write_shingles(keys, hashes, offsets, signed)
        if p.backend == "datasketch":
            texts = docs.column("text").to_pylist()
            lists = [[" ".join(s).encode() for s in shingles(t, m, p.ngram)]
                     for t, m in zip(texts, modes, strict=True)]
            sig = datasketch_signatures(lists, p.permutations, self.seed, p.scheme)
        else:
            a, b = permutations(p.permutations, self.seed, p.scheme)
            sig = signatures(hashes, offsets, a, b, p.scheme)
        self._write_bands(sig[signed], keys[signed])
        self._write_meta(docs, keys, np.diff(offsets))
        return {"docs": len(rows), "signed": int(signed.sum()), "shingles": total}

    def _write_bands(self, sig: np.ndarray, keys: np.ndarray) -> None:
        p = self.params
        bands, rows = p.lsh_shape()
        buckets = band_buckets(sig, bands, rows)
        for part in range(p.partitions):
            mine = np.arange(part, bands, p.partitions)
            band = np.repeat(mine, len(keys)).astype(np.uint16)
            bucket = buckets[:, mine].T.reshape(-1)
            key = np.tile(keys, len(mine))
            order = np.lexsort((key, bucket, band))
            out = pa.table([pa.array(band[order]), pa.array(bucket[order]),
                            pa.array(key[order])], schema=BAND_SCHEMA)
            storage.write_parquet_atomic(self.bands_out[part], out)

    def _write_meta(self, docs: pa.Table, keys: np.ndarray, counts: np.ndarray) -> None:
        licensed = license_ranks(docs.column("license"), self.params.keep_order,
                                 docs.column("license_type"))
        meta = pa.table([pa.array(keys), docs.column("id").cast(pa.string()),
                         pc.fill_null(docs.column("stars"), 0).cast(pa.int64()),
                         licensed, pa.array(counts.astype(np.int64))], schema=META_SCHEMA)
        storage.write_parquet_atomic(self.meta_out, meta)

    def _write_shingles(self, keys: np.ndarray, sets: np.ndarray, offsets: np.ndarray,
                        signed: np.ndarray) -> None:
        part_of = doc_partition(keys, self.params.partitions)
        for part in range(self.params.partitions):
            chosen = np.flatnonzero((part_of == part) & signed)
            lengths = (offsets[chosen + 1] - offsets[chosen]).astype(np.int32)
            list_offsets = np.zeros(len(chosen) + 1, dtype=np.int32)
            np.cumsum(lengths, out=list_offsets[1:])
            values = sets[np.repeat((part_of == part) & signed, np.diff(offsets))]
            lists = pa.ListArray.from_arrays(pa.array(list_offsets), pa.array(values))
            out = pa.table([pa.array(keys[chosen]), lists], schema=SHINGLE_SCHEMA)
            storage.write_parquet_atomic(self.shingles_out[part], out)


def shingle_hashes(texts: pa.ChunkedArray, modes: list[Mode],
                    n: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of every document in order, hashing each tokenizer mode's documents together."""
    mode_of = np.array(modes, dtype=object)
    counts = np.zeros(len(modes), dtype=np.int64)
    pieces: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for mode in sorted(set(modes)):
        where = np.flatnonzero(mode_of == mode)
        chosen = texts if len(where) == len(modes) else texts.take(pa.array(where))
        hashes, offsets = batch_shingle_hashes(chosen, mode, n)
        counts[where] = np.diff(offsets)
        pieces[mode] = (where, hashes, offsets)
    if len(pieces) == 1:
        _, hashes, offsets = next(iter(pieces.values()))
        return hashes, offsets
    out_offsets = np.zeros(len(modes) + 1, dtype=np.int64)
    np.cumsum(counts, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=np.uint32)
    for where, hashes, offsets in pieces.values():
        starts = out_offsets[where]
        for start, lo, hi in zip(starts.tolist(), offsets[:-1].tolist(), offsets[1:].tolist(),
                                 strict=True):
            out[start:start + hi - lo] = hashes[lo:hi]
    return out, out_offsets


def unique_per_doc(hashes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique shingle hashes of each document (np.sort, not np.unique: faster)."""
    docs = len(offsets) - 1
    doc = np.repeat(np.arange(docs, dtype=np.uint64), np.diff(offsets))
    packed = np.sort((doc << np.uint64(32)) | hashes.astype(np.uint64))
    keep = np.ones(packed.size, dtype=bool)
    keep[1:] = packed[1:] != packed[:-1]
    packed = packed[keep]
    counts = np.bincount((packed >> np.uint64(32)).astype(np.int64), minlength=docs)
    out_offsets = np.zeros(docs + 1, dtype=np.int64)
    np.cumsum(counts, out=out_offsets[1:])
    return (packed & np.uint64(0xFFFFFFFF)).astype(np.uint32), out_offsets
