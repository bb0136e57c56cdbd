"""Exact deduplication across all sources: one copy of each distinct text survives.

Phases: `hash` (per shard: content hash, partitioned by hash), `decide` (per
partition: keep the best copy of each hash), then the applier removes the rest
shard by shard. Memory per task is one partition's hashes, never the corpus.
Which copy survives: `keep_order` (stages/keeper.py): most stars, then a known
licence, then smallest id; or The Stack v2's licence-class-first order.

With `against: [runs...]`, a decide task first reads the same hash partition of each
earlier run's dedup index: every document whose hash an earlier run kept is removed as
`duplicate_of_earlier` (the earlier copy has shipped, so it wins whatever its stars); the
rest are deduplicated among themselves as above.

The stage's section of a run's dedup index (stages/dedup_index/) is written and read
here: `index/exact/part-PPPP.parquet`, (hash, id of the kept representative), one row
per hash, sorted by hash; partition = the first 32 bits of the hash mod `partitions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import pyarrow as pa
import pyarrow.compute as pc
import xxhash
from pydantic import PositiveInt

from . import storage
from .base import (
    DecisionsApplier,
    GlobalContext,
    GlobalStage,
    IndexReads,
    IndexSource,
    Phase,
    ShardContext,
    StageParams,
    StageResult,
    Task,
    in_scope,
)
from .dedup_index.export import removed_for, representatives
from .dedup_index.format import (
    IndexedRun,
    IndexFiles,
    against_notes,
    folder_bytes,
    indexed_runs,
    part_file,
    read_index,
)
from .hooks import Cost, CostInput, StatsEntry
from .keeper import KeepOrder, explain_duplicate, license_ranks, sort_keys
from .paths import LocalPath

if TYPE_CHECKING:  # polars is imported by the tasks that use it: ~0.4 s, and the
    # driver, `plan` and the workbench import this module for its hooks
    import polars as pl


class ExactDedupParams(StageParams):
    normalize: Literal["none", "whitespace"] = "none"
    """`whitespace` collapses runs of whitespace before hashing."""
    partitions: PositiveInt = 8
    """Hash partitions; memory per decide task is about corpus hashes / partitions. A run
    uses at most one per input shard (`ExactDedup.partitioned`)."""
    keep_order: KeepOrder = "stars"
    """Which copy survives: `stars` (most stars, then a known licence, then smallest id)
    or `stack-v2` (permissive > no licence > non-permissive, then stars, then id)."""
    against: list[LocalPath] = []
    """Earlier finished run folders (local or fsspec): documents whose text one of them
    kept are removed as `duplicate_of_earlier`. Each needs a dedup index (`index: true`
    there, or `lemur-data index --run-dir RUN`)."""
    index: bool = False
    """Write this run's dedup index (`<run>/index/`) when the run ends, so later runs can
    deduplicate against it."""


def hash_file(work_dir: str, shard: str, part: int) -> str:
    """The hash phase's output: (hash, id, stars, license_rank) of one shard's partition."""
    return storage.join(work_dir, "hashes", shard, f"part-{part:04d}.parquet")


def hash_partition(hashes: pl.Expr, partitions: int) -> pl.Expr:
    """Which partition a hex hash falls in: its first 32 bits modulo `partitions`."""
    return hashes.str.slice(0, 8).str.to_integer(base=16) % partitions


def partition_of(digest: str, partitions: int) -> int:
    """`hash_partition` of one hex hash."""
    return int(digest[:8], 16) % partitions


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
                                     ["id", "text", "stars", "license", "license_type", "source",
                                      "kind"])
        if self.scope is not None:
            table = table.filter(in_scope(table, self.scope))
        hashes = content_hashes(table.column("text"), self.normalize)
        # pyarrow and one int() per row: polars' import (~0.2 s) costs more than a
        # shard's partitioning; the columns are typed as polars wrote them before
        frame = pa.table({
            "hash": pa.array(hashes, pa.large_string()),
            "id": table.column("id").cast(pa.large_string()),
            "stars": pc.fill_null(table.column("stars"), 0).cast(pa.int64()),
            "license_rank": license_ranks(table.column("license"), self.keep_order,
                                          table.column("license_type")).cast(pa.int8()),
        })
        part_of = pa.array([partition_of(h, self.partitions) for h in hashes], pa.int64())
        for part in range(self.partitions):
            rows = frame.filter(pc.equal(part_of, part)).combine_chunks()
            storage.write_parquet_atomic(storage.join(self.out_dir, f"part-{part:04d}.parquet"),
                                         rows)
        return {"docs": table.num_rows}


@dataclass(frozen=True)
class DecidePartition:
    inputs: list[str]
    out_path: str
    shard_of: dict[str, str]  # hash-input folder -> shard id
    keep_order: KeepOrder = "stars"
    part: int = 0
    partitions: int = 1
    earlier: tuple[IndexedRun, ...] = ()

    def __call__(self) -> dict[str, Any]:
        tables = [storage.read_parquet(path) for path in self.inputs]
        rows = sum(t.num_rows for t in tables)
        if not self.earlier and 0 < rows <= SMALL_PARTITION_ROWS:
            drops = decide_small(tables, [self.shard_of[p.rsplit("/", 2)[-2]]
                                          for p in self.inputs], self.keep_order)
            storage.write_parquet_atomic(self.out_path, drops)
            return {"duplicates": drops.num_rows, "of_earlier": 0}
        import polars as pl

        frames = [cast(pl.DataFrame, pl.from_arrow(table)).with_columns(
                      pl.lit(self.shard_of[path.rsplit("/", 2)[-2]]).alias("shard"))
                  for path, table in zip(self.inputs, tables, strict=True)]
        frame = pl.concat(frames) if frames else pl.DataFrame()
        if frame.is_empty():
            storage.write_parquet_atomic(self.out_path, DROPS_SCHEMA.empty_table())
            return {"duplicates": 0}
        decided = []
        for run in self.earlier:
            kept = self._earlier_hashes(run)
            hits = frame.join(kept, on="hash", how="inner")
            decided.append(hits.select("shard", "id", "kept_id",
                                       pl.lit(run.run).alias("earlier")))
            frame = frame.join(kept, on="hash", how="anti")
        by, descending = sort_keys("hash", self.keep_order)
        ranked = frame.sort(by, descending=descending)
        keeper = ranked.group_by("hash", maintain_order=True).agg(pl.col("id").first()
                                                                  .alias("kept_id"))
        drops = (ranked.join(keeper, on="hash").filter(pl.col("id") != pl.col("kept_id"))
                 .select("shard", "id", "kept_id", pl.lit(None, pl.String).alias("earlier")))
        drops = pl.concat([*decided, drops]).sort(["shard", "id"])
        storage.write_parquet_atomic(self.out_path, drops.to_arrow().cast(DROPS_SCHEMA))
        return {"duplicates": drops.height,
                "of_earlier": sum(d.height for d in decided)}

    def _earlier_hashes(self, run: IndexedRun) -> pl.DataFrame:
        """(hash, kept_id) of the earlier run's kept documents in this partition."""
        import polars as pl

        parts = [storage.read_parquet(index_file(run.files, q))
                 for q in run.parts_for(self.part, self.partitions)]
        kept = pl.from_arrow(pa.concat_tables(parts))
        assert isinstance(kept, pl.DataFrame)
        # One copy per hash (an earlier run keeps one, but two earlier scopes could not)
        return (kept.filter(hash_partition(pl.col("hash"), self.partitions) == self.part)
                .sort(["hash", "id"]).unique("hash", keep="first", maintain_order=True)
                .rename({"id": "kept_id"}))


SMALL_PARTITION_ROWS = 50_000
"""A decide task with at most this many hashes (and no `against` runs) sorts them in
Python: polars' import (~0.2 s per worker) costs more than that. Same drops either way
(tests/test_exact_dedup.py checks the files are byte-identical)."""


def decide_small(tables: list[pa.Table], shards: list[str], keep_order: KeepOrder) -> pa.Table:
    """DecidePartition's drops without polars: per hash the first row in `sort_keys`
    order survives, the rest are dropped, sorted by (shard, id)."""
    rows = []
    for table, shard in zip(tables, shards, strict=True):
        columns = [table.column(c).to_pylist() for c in ("hash", "id", "stars", "license_rank")]
        rows += [(*row, shard) for row in zip(*columns, strict=True)]
    # (hash ascending, then the survivor first; ids are unique, so the order is total)
    if keep_order == "stars":
        rows.sort(key=lambda r: (r[0], -r[2], -r[3], r[1]))
    else:
        rows.sort(key=lambda r: (r[0], -r[3], -r[2], r[1]))
    drops = []
    kept_id, last = "", None
    for digest, doc_id, _, _, shard in rows:
        if digest != last:
            kept_id, last = doc_id, digest
        elif doc_id != kept_id:
            drops.append((shard, doc_id, kept_id))
    drops.sort()
    shard, ids, kept = (list(c) for c in zip(*drops, strict=True)) if drops else ([], [], [])
    return pa.table([pa.array(shard, pa.string()), pa.array(ids, pa.string()),
                     pa.array(kept, pa.string()), pa.nulls(len(ids), pa.string())],
                    schema=DROPS_SCHEMA)


DROPS_SCHEMA = pa.schema([("shard", pa.string()), ("id", pa.string()), ("kept_id", pa.string()),
                          ("earlier", pa.string())])
"""`earlier`: the earlier run whose kept copy this document duplicates (null: this run's)."""


def _explain(row: dict[str, Any]) -> tuple[str, str]:
    if row["earlier"] is None:
        return "duplicate", f"duplicate of {row['kept_id']}"
    return ("duplicate_of_earlier",
            f"duplicate of {row['kept_id']} in earlier run {row['earlier']}")


class ExactDedupApplier(DecisionsApplier[ExactDedupParams]):
    name = "exact_dedup"
    Params = ExactDedupParams

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        drops = storage.read_shard_rows(storage.list_files(self.decisions_dir, ".parquet"),
                                        ctx.shard_id, ["id", "kept_id", "earlier"])
        return StageResult.from_decisions(docs, drops, _explain)


SECTION = "exact"


def index_file(files: IndexFiles, part: int) -> str:
    return files.section(SECTION, part_file(part))


def index_params(p: ExactDedupParams) -> dict[str, Any]:
    """What decides a hash: an indexed run is usable only with the same."""
    return {"normalize": p.normalize}


def export_partition(files: IndexFiles, work_dir: str, shards: list[str], part: int,
                     kept: pa.Array, removed: dict[str, str]) -> int:
    """index/exact/part-P: (hash, id of the representative), one row per hash, sorted."""
    tables = [storage.read_parquet(hash_file(work_dir, shard, part), ["hash", "id"])
              for shard in shards]
    table = pa.concat_tables(tables) if tables else pa.schema(
        [("hash", pa.string()), ("id", pa.string())]).empty_table()
    table = table.set_column(1, "id", representatives(table.column("id"), removed, kept))
    table = table.filter(pc.is_valid(table.column("id"))).sort_by([("hash", "ascending"),
                                                                   ("id", "ascending")])
    hashes = table.column("hash").to_pylist()
    first = [i == 0 or hashes[i] != hashes[i - 1] for i in range(len(hashes))]
    table = table.filter(pa.array(first, pa.bool_()))
    storage.write_parquet_atomic(index_file(files, part), table)
    return table.num_rows


class ExactDedup(GlobalStage[ExactDedupParams]):
    name = "exact_dedup"
    about = (
        "exact deduplication: one copy of each distinct text survives")
    rate_mb_s = (60.0, 60.0)  # MB/s per core (code, text); docs/benchmarks.md
    Params = ExactDedupParams

    @classmethod
    def card_notes(cls, entry: StatsEntry) -> list[str]:
        return against_notes(entry)

    @classmethod
    def cost(cls, params: ExactDedupParams, size: CostInput) -> Cost:
        """~80 bytes of hash files per document; a decide task holds its partition's."""
        base = super().cost(params, size)
        return Cost(base.core_hours, size.docs * 80 + size.step_write_bytes,
                    base.memory_mb + size.docs * 100 / params.partitions / 1e6)

    @classmethod
    def explain(cls, doc: dict[str, Any], entry: dict[str, Any], work: Any) -> list[str]:
        return explain_duplicate(doc, entry, work, "exact copy")

    def partitioned(self, ctx: GlobalContext) -> ExactDedupParams:
        """The parameters with `partitions` at most the input's shard count: a decide task
        then holds at most about one shard's hashes, and a small build runs no decide
        tasks that cost more than their work. Decisions do not depend on the count."""
        count = min(self.params.partitions, max(1, len(ctx.input_shards)))
        return (self.params if count == self.params.partitions
                else self.params.model_copy(update={"partitions": count}))

    def phases(self, ctx: GlobalContext) -> list[Phase]:
        p = self.partitioned(ctx)
        hash_dir = storage.join(ctx.work_dir, "hashes")
        hashing = Phase("hash", [
            Task(shard, HashShard(path, storage.join(hash_dir, shard), p.normalize, p.partitions,
                                  p, p.keep_order),
                 tuple(hash_file(ctx.work_dir, shard, part) for part in range(p.partitions)))
            for shard, path in ctx.input_shards.items()])
        shard_of = {shard: shard for shard in ctx.input_shards}
        earlier = tuple(self.earlier())
        deciding = Phase("decide", [
            Task(f"part-{part:04d}", DecidePartition(
                [hash_file(ctx.work_dir, shard, part) for shard in ctx.input_shards],
                storage.join(ctx.work_dir, "decisions", f"part-{part:04d}.parquet"), shard_of,
                p.keep_order, part, p.partitions, earlier),
                 (storage.join(ctx.work_dir, "decisions", f"part-{part:04d}.parquet"),))
            for part in range(p.partitions)])
        return [hashing, deciding]

    def earlier(self) -> list[IndexedRun]:
        """The `against` runs, checked: refused if an index is missing or its parameters
        differ (IndexedRunError)."""
        return indexed_runs(self.params.against, SECTION, index_params(self.params),
                            self.name, self.index_format)

    def summary(self, ctx: GlobalContext) -> dict[str, Any]:
        """How many documents each earlier run removed (read from the decisions)."""
        if not self.params.against:
            return {}
        files = storage.list_files(storage.join(ctx.work_dir, "decisions"), ".parquet")
        tables = [storage.read_parquet(f, ["earlier"]) for f in files]
        runs = pa.concat_tables(tables).column("earlier").to_pylist() if tables else []
        return {"against": [{"run": run, "removed": runs.count(run)}
                            for run in self.params.against]}

    index_section = SECTION

    def index_removed(self, ctx: GlobalContext) -> dict[str, str]:
        return removed_for(storage.join(ctx.work_dir, "decisions"))

    def export_index(self, source: IndexSource) -> dict[str, Any]:
        p, ctx = self.partitioned(source.ctx), source.ctx
        files, shards = IndexFiles(ctx.run_dir), sorted(ctx.input_shards)
        docs = sum(export_partition(files, ctx.work_dir, shards, part, source.kept,
                                    source.removed) for part in range(p.partitions))
        return {**index_params(p), "partitions": p.partitions, "docs": docs}

    def index_reads(self) -> list[IndexReads]:
        """The exact hashes of each `against` run, read in full."""
        return [IndexReads(run, int((read_index(run).get(SECTION) or {}).get("docs", 0)),
                           folder_bytes(IndexFiles(run).section(SECTION)), 0)
                for run in self.params.against]

    def applier(self, ctx: GlobalContext) -> DecisionsApplier:
        return ExactDedupApplier(self.params, storage.join(ctx.work_dir, "decisions"))
