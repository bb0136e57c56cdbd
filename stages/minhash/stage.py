"""MinHash near-deduplication: one document per cluster of near duplicates survives.

Phases (each a set of independent Ray tasks; memory per task is bounded by the
partitioning, never by the corpus):

1. `signatures` (per shard): shingle hashes, MinHash signatures, LSH band
   buckets split into `partitions` band groups; shingle sets split into
   `partitions` document partitions (signatures.py).
2. `buckets` (per band partition): candidate pairs (buckets.py).
3. `verify_ship` + `verify_check` (per document partition, if `verify`):
   true Jaccard of candidate pairs on the shingle sets (verify.py).
4. `components` (one task): connected components, one keeper per cluster,
   decisions split by shard (components.py).

The applier then removes the others shard by shard with reason
`near_duplicate`. Keeper priority: most stars, then a known license, then
smallest id (as exact dedup).

With `against` (earlier runs' indexes), `buckets` also finds candidates against
the earlier kept documents, `verify_earlier` checks them, and `components` removes
the matched documents (`near_duplicate_of_earlier`) before clustering the rest
(dedup_index_match.py). The stage's section of a run's dedup index is written and read
in dedup_index.py.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .. import storage
from ..base import (
    DocumentStage,
    GlobalContext,
    GlobalStage,
    IndexReads,
    IndexSource,
    Phase,
    ShardContext,
    StageResult,
    Task,
)
from ..dedup_index.export import removed_for
from ..dedup_index.format import IndexedRun, against_notes
from ..hooks import Cost, CostInput, StatsEntry
from ..keeper import explain_duplicate
from . import dedup_index
from .buckets import BucketPartition
from .components import Components
from .dedup_index_match import CheckEarlier
from .files import WorkFiles
from .params import MinHashParams
from .signatures import SignShard
from .verify import CheckPairs, ShipSets


def _explain(row: dict[str, Any]) -> tuple[str, str]:
    if row["earlier"] is None:
        return "near_duplicate", (f"near duplicate of {row['kept_id']} (cluster "
                                  f"{row['cluster']}, {row['size']} documents)")
    return ("near_duplicate_of_earlier",
            f"near duplicate of {row['kept_id']} in earlier run {row['earlier']}")


class MinHashApplier(DocumentStage[MinHashParams]):
    name = "minhash"
    Params = MinHashParams

    def __init__(self, params: MinHashParams, files: WorkFiles,
                 part_of_shard: dict[str, int]) -> None:
        super().__init__(params)
        self.files = files
        self.part_of_shard = part_of_shard

    def cache_key(self) -> str:
        return f"{super().cache_key()}:{self.files.root}"

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        drops = storage.read_shard_rows(
            [self.files.decisions(self.part_of_shard[ctx.shard_id])], ctx.shard_id,
            ["id", "kept_id", "cluster", "size", "earlier"])
        return StageResult.from_decisions(docs, drops, _explain)


class MinHash(GlobalStage[MinHashParams]):
    name = "minhash"
    about = (
        "MinHash LSH near-deduplication: one document per cluster "
        "survives")
    rate_mb_s = (20.0, 20.0)  # MB/s per core (code, text); docs/benchmarks.md
    Params = MinHashParams

    @classmethod
    def explain(cls, doc: dict[str, Any], entry: dict[str, Any], work: Any) -> list[str]:
        return explain_duplicate(doc, entry, work, "near duplicate")

    @classmethod
    def card_notes(cls, entry: StatsEntry) -> list[str]:
        return against_notes(entry)

    @classmethod
    def cost(cls, params: MinHashParams, size: CostInput) -> Cost:
        """Band rows of 8 bytes per permutation and document (256, the default, assumed);
        a buckets task holds its partition's."""
        base = super().cost(params, size)
        permutations = 256
        return Cost(base.core_hours, size.docs * permutations * 8 + size.step_write_bytes,
                    base.memory_mb + size.docs * permutations * 8 / params.partitions / 1e6)

    @classmethod
    def card_limitations(cls, entry: StatsEntry | None) -> list[str]:
        return ["No near-duplicate (MinHash) stage ran: only exact copies, if any, "
                "were removed."] if entry is None else []

    def partitioned(self, ctx: GlobalContext) -> MinHashParams:
        """The parameters with `partitions` at most the input's shard count.

        A partition's task holds about 1/partitions of the corpus' band rows or shingle
        sets; with no more partitions than shards that is at most about one shard's, what
        a signatures task holds anyway. More partitions than shards only add tasks (a
        small build's 24 buckets and verify tasks cost more than its signing). The
        decisions do not depend on the count, and the count depends only on the plan.
        """
        count = min(self.params.partitions, max(1, len(ctx.input_shards)))
        return (self.params if count == self.params.partitions
                else self.params.model_copy(update={"partitions": count}))

    def phases(self, ctx: GlobalContext) -> list[Phase]:
        p = self.partitioned(ctx)
        files, parts = WorkFiles(ctx.work_dir), range(p.partitions)
        shards = sorted(ctx.input_shards)
        seed = p.effective_seed(ctx.seed)
        earlier = tuple(self.earlier(ctx.seed))

        def task(key: str, run: Any) -> Task:
            return Task(key, run, outputs=run.outputs())

        signing = Phase("signatures", [
            task(shard, SignShard(
                ctx.input_shards[shard], index, shard, p, seed,
                bands_out=tuple(files.bands(shard, q) for q in parts),
                meta_out=files.meta(shard),
                shingles_out=tuple(files.shingles(shard, q) for q in parts) if p.verify else ()))
            for index, shard in enumerate(shards)])
        bucketing = Phase("buckets", [
            task(f"part-{band:04d}", BucketPartition(
                tuple(files.bands(shard, band) for shard in shards),
                tuple(files.pairs(band, q) for q in parts), p.bucket_window, band, earlier,
                tuple(files.earlier_pairs(band, q) for q in parts) if earlier else ()))
            for band in parts])
        phases = [signing, bucketing]
        candidate_files: tuple[str, ...] = ()
        shingles: dict[int, tuple[str, ...]] = {}
        if p.verify:
            shingles = {q: tuple(files.shingles(shard, q) for shard in shards) for q in parts}
            phases.append(Phase("verify_ship", [
                task(f"part-{q:04d}", ShipSets(
                    tuple(files.pairs(band, q) for band in parts), shingles[q],
                    pairs_out=tuple(files.shipped_pairs(q, to) for to in parts),
                    sets_out=tuple(files.shipped_sets(q, to) for to in parts)))
                for q in parts]))
            phases.append(Phase("verify_check", [
                task(f"part-{q:04d}", CheckPairs(
                    tuple(files.shipped_pairs(src, q) for src in parts),
                    tuple(files.shipped_sets(src, q) for src in parts),
                    shingles[q], files.edges(q), p.threshold))
                for q in parts]))
            edge_files = tuple(files.edges(q) for q in parts)
            candidate_files = tuple(files.shipped_pairs(src, q) for src in parts for q in parts)
        else:
            edge_files = tuple(files.pairs(band, q) for band in parts for q in parts)
        earlier_files: tuple[str, ...] = ()
        if earlier and p.verify:
            phases.append(Phase("verify_earlier", [
                task(f"part-{q:04d}", CheckEarlier(
                    tuple(files.earlier_pairs(band, q) for band in parts), shingles[q],
                    earlier, files.earlier_edges(q), p.threshold))
                for q in parts]))
            earlier_files = tuple(files.earlier_edges(q) for q in parts)
        elif earlier:
            earlier_files = tuple(files.earlier_pairs(band, q) for band in parts for q in parts)
        phases.append(Phase("components", [task("all", Components(
            edge_files, candidate_files, tuple(files.meta(shard) for shard in shards),
            tuple(shards), decisions_out=tuple(files.decisions(q) for q in parts),
            clusters_out=files.clusters(), keep_order=p.keep_order,
            earlier_files=earlier_files, earlier=earlier))]))
        return phases

    def earlier(self, manifest_seed: int) -> list[IndexedRun]:
        """The `against` runs, checked: refused if an index is missing, of another format,
        or made with other MinHash parameters (IndexedRunError names the parameter)."""
        return dedup_index.checked_runs(self.params, manifest_seed)

    index_section = dedup_index.SECTION
    index_format = dedup_index.FORMAT

    def index_removed(self, ctx: GlobalContext) -> dict[str, str]:
        return removed_for(storage.join(ctx.work_dir, "decisions"))

    def export_index(self, source: IndexSource) -> dict[str, Any]:
        return dedup_index.export(self.partitioned(source.ctx), source)

    def index_reads(self) -> list[IndexReads]:
        return dedup_index.reads(self.params)

    def applier(self, ctx: GlobalContext) -> DocumentStage:
        p = self.partitioned(ctx)
        part_of = {shard: i % p.partitions for i, shard in enumerate(sorted(ctx.input_shards))}
        return MinHashApplier(p, WorkFiles(ctx.work_dir), part_of)

    def summary(self, ctx: GlobalContext) -> dict[str, Any]:
        p = self.partitioned(ctx)
        bands, rows = p.lsh_shape()
        clusters_path = WorkFiles(ctx.work_dir).clusters()
        found = storage.read_json(clusters_path) if storage.exists(clusters_path) else {}
        return {"lsh": {"ngram": p.ngram, "permutations": p.permutations, "bands": bands,
                        "rows": rows, "threshold": p.threshold, "weights": list(p.weights()),
                        "seed": p.effective_seed(ctx.seed),
                        "scheme": p.scheme, "backend": p.backend, "tokenizer": p.tokenizer,
                        "verify": p.verify, "partitions": p.partitions,
                        "bucket_window": p.bucket_window},
                **found}
