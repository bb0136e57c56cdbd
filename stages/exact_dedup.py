"""Exact deduplication across all sources: one copy of each distinct text survives.

Phases: `hash` (per shard: content hash, partitioned by hash), `decide` (per
partition: keep the best copy of each hash), then the applier removes the rest
shard by shard. Memory per task is one partition's hashes, never the corpus.
Which copy survives: `keep_order` (stages/keeper.py): most stars, then a known
licence, then smallest id; or The Stack v2's licence-class-first order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import xxhash
from pydantic import PositiveInt

from lemur_data.stages import storage
from lemur_data.stages.base import (
    DocumentStage,
    GlobalContext,
    GlobalStage,
    Phase,
    ShardContext,
    StageParams,
    StageResult,
    Task,
    in_scope,
)
from lemur_data.stages.keeper import KeepOrder, license_ranks, sort_keys


class ExactDedupParams(StageParams):
    normalize: Literal["none", "whitespace"] = "none"
    """`whitespace` collapses runs of whitespace before hashing."""
    partitions: PositiveInt = 8
    """Hash partitions; memory per decide task is about corpus hashes / partitions."""
    keep_order: KeepOrder = "stars"
    """Which copy survives: `stars` (most stars, then a known licence, then smallest id)
    or `stack-v2` (permissive > no licence > non-permissive, then stars, then id)."""


def content_hashes(text: pa.ChunkedArray | pa.Array, normalize: str) -> list[str]:
    if normalize == "whitespace":
        text = pc.utf8_trim_whitespace(pc.replace_substring_regex(text, r"\s+", " "))
    return [xxhash.xxh3_128_hexdigest(t.encode()) for t in text.to_pylist()]


@dataclass(frozen=True)
class HashShard:
    shard_path: str
    out_dir: str
    normalize: str
    partitions: int
    scope: StageParams | None = None
    keep_order: KeepOrder = "stars"

    def __call__(self) -> dict[str, Any]:
        table = storage.read_parquet(self.shard_path,
                                     ["id", "text", "stars", "license", "source", "kind"])
        if self.scope is not None:
            table = table.filter(in_scope(table, self.scope))
        hashes = content_hashes(table.column("text"), self.normalize)
        frame = pl.DataFrame({
            "hash": hashes,
            "id": table.column("id").to_pylist(),
            "stars": pc.fill_null(table.column("stars"), 0).to_pylist(),
            "license_rank": license_ranks(table.column("license"), self.keep_order).to_pylist(),
        }, schema={"hash": pl.String, "id": pl.String, "stars": pl.Int64,
                   "license_rank": pl.Int8})
        frame = frame.with_columns(
            (pl.col("hash").str.slice(0, 8).str.to_integer(base=16) % self.partitions)
            .alias("part"))
        for part in range(self.partitions):
            rows = frame.filter(pl.col("part") == part).drop("part").to_arrow()
            storage.write_parquet_atomic(storage.join(self.out_dir, f"part-{part:04d}.parquet"),
                                         rows)
        return {"docs": table.num_rows}


@dataclass(frozen=True)
class DecidePartition:
    inputs: list[str]
    out_path: str
    shard_of: dict[str, str]  # hash-input folder -> shard id
    keep_order: KeepOrder = "stars"

    def __call__(self) -> dict[str, Any]:
        frames = [pl.from_arrow(storage.read_parquet(path)).with_columns(
                      pl.lit(self.shard_of[path.rsplit("/", 2)[-2]]).alias("shard"))
                  for path in self.inputs]
        frame = pl.concat(frames) if frames else pl.DataFrame()
        if frame.is_empty():
            storage.write_parquet_atomic(self.out_path, _empty_drops())
            return {"duplicates": 0}
        by, descending = sort_keys("hash", self.keep_order)
        ranked = frame.sort(by, descending=descending)
        keeper = ranked.group_by("hash", maintain_order=True).agg(pl.col("id").first()
                                                                  .alias("kept_id"))
        drops = (ranked.join(keeper, on="hash").filter(pl.col("id") != pl.col("kept_id"))
                 .select("shard", "id", "kept_id").sort(["shard", "id"]))
        storage.write_parquet_atomic(self.out_path, drops.to_arrow().cast(_empty_drops().schema))
        return {"duplicates": drops.height}


def _empty_drops() -> pa.Table:
    return pa.schema([("shard", pa.string()), ("id", pa.string()),
                      ("kept_id", pa.string())]).empty_table()


class ExactDedupApplier(DocumentStage[ExactDedupParams]):
    name = "exact_dedup"
    Params = ExactDedupParams

    def __init__(self, params: ExactDedupParams, decisions_dir: str) -> None:
        super().__init__(params)
        self.decisions_dir = decisions_dir

    def cache_key(self) -> str:
        return f"{super().cache_key()}:{self.decisions_dir}"

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        files = storage.list_files(self.decisions_dir, ".parquet")
        drops = ds.dataset(files, format="parquet").to_table(
            filter=ds.field("shard") == ctx.shard_id, columns=["id", "kept_id"])
        kept_of = dict(zip(drops.column("id").to_pylist(), drops.column("kept_id").to_pylist(),
                           strict=True))
        ids = docs.column("id").to_pylist()
        reasons = ["duplicate" if i in kept_of else None for i in ids]
        details = [f"duplicate of {kept_of[i]}" if i in kept_of else None for i in ids]
        return StageResult(docs, pa.array(reasons, pa.string()), pa.array(details, pa.string()))


class ExactDedup(GlobalStage[ExactDedupParams]):
    name = "exact_dedup"
    Params = ExactDedupParams

    def phases(self, ctx: GlobalContext) -> list[Phase]:
        p = self.params
        hash_dir = storage.join(ctx.work_dir, "hashes")
        parts = [f"part-{part:04d}.parquet" for part in range(p.partitions)]
        hashing = Phase("hash", [
            Task(shard, HashShard(path, storage.join(hash_dir, shard), p.normalize, p.partitions,
                                  p, p.keep_order),
                 tuple(storage.join(hash_dir, shard, name) for name in parts))
            for shard, path in ctx.input_shards.items()])
        shard_of = {shard: shard for shard in ctx.input_shards}
        deciding = Phase("decide", [
            Task(f"part-{part:04d}", DecidePartition(
                [storage.join(hash_dir, shard, f"part-{part:04d}.parquet")
                 for shard in ctx.input_shards],
                storage.join(ctx.work_dir, "decisions", f"part-{part:04d}.parquet"), shard_of,
                p.keep_order),
                 (storage.join(ctx.work_dir, "decisions", f"part-{part:04d}.parquet"),))
            for part in range(p.partitions)])
        return [hashing, deciding]

    def applier(self, ctx: GlobalContext) -> DocumentStage:
        return ExactDedupApplier(self.params, storage.join(ctx.work_dir, "decisions"))  # type: ignore[arg-type]
