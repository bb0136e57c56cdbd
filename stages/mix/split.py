"""Phase `split`: one task per input shard.

Writes, under `split/<shard>/`, per component: `<slug>.bin` (its documents'
token ids back to back) and `<slug>.parquet` (tokens and hash per document);
and for the shard: `histogram.parquet` (tokens and documents per component
and hash bucket) and `info.json` (token dtype, unassigned documents).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from .. import storage
from ..tokenize.stage import TOKEN_IDS
from .params import REPO_FILES, Component, assign
from .select import bucket_of, hashes_of


@dataclass(frozen=True)
class SplitShard:
    shard_path: str
    out_dir: str
    components: list[Component]
    seed: int
    bits: int

    def __call__(self) -> dict[str, Any]:
        columns = ["id", "source", "kind", "lang", TOKEN_IDS]
        if REPO_FILES in storage.parquet_columns(self.shard_path):  # after repo_context
            columns.append(REPO_FILES)
        table = storage.read_parquet(self.shard_path, columns)
        ids = table.column(TOKEN_IDS).combine_chunks()
        dtype = np.dtype(ids.type.value_type.to_pandas_dtype())
        which = assign(table, [c.key for c in self.components])
        hashes = hashes_of(table.column("id").to_pylist(), self.seed)
        buckets = bucket_of(hashes, self.bits)
        lengths = ids.value_lengths().to_numpy(zero_copy_only=False).astype(np.int64)
        rows: dict[str, list[Any]] = {"component": [], "bucket": [], "tokens": [], "docs": []}
        tokens: dict[str, int] = {}
        for number, component in enumerate(self.components):
            mask = which == number
            flat = ids.filter(pa.array(mask)).flatten().to_numpy(zero_copy_only=False)
            storage.write_bytes_atomic(self._path(component, ".bin"),
                                       flat.astype(dtype, copy=False).tobytes())
            storage.write_parquet_atomic(self._path(component, ".parquet"), pa.table({
                "tokens": lengths[mask], "hash": hashes[mask]}))
            per_bucket = np.bincount(buckets[mask], weights=lengths[mask],
                                     minlength=2**self.bits).astype(np.int64)
            docs = np.bincount(buckets[mask], minlength=2**self.bits)
            used = np.flatnonzero(docs)
            rows["component"] += [component.key] * len(used)
            rows["bucket"] += used.tolist()
            rows["tokens"] += per_bucket[used].tolist()
            rows["docs"] += docs[used].tolist()
            tokens[component.key] = int(lengths[mask].sum())
        storage.write_parquet_atomic(storage.join(self.out_dir, "histogram.parquet"), pa.table(
            rows, schema=pa.schema([("component", pa.string()), ("bucket", pa.int32()),
                                    ("tokens", pa.int64()), ("docs", pa.int64())])))
        storage.write_json_atomic(storage.join(self.out_dir, "info.json"), {
            "dtype": dtype.name, "docs": table.num_rows,
            "unassigned_docs": int((which < 0).sum()),
            "unassigned_tokens": int(lengths[which < 0].sum())})
        return {"docs": table.num_rows, "tokens": tokens, "dtype": dtype.name}

    def _path(self, component: Component, suffix: str) -> str:
        return storage.join(self.out_dir, component.slug + suffix)
