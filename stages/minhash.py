"""MinHash near-deduplication: one document per cluster of near duplicates survives.

Phases (each a set of independent Ray tasks; memory per task is bounded by the
partitioning, never by the corpus):

1. `signatures` (per shard): shingle hashes, MinHash signatures, LSH band
   buckets split into `partitions` band groups; shingle sets split into
   `partitions` document partitions (minhash_shard.py).
2. `buckets` (per band partition): candidate pairs (minhash_buckets.py).
3. `verify_ship` + `verify_check` (per document partition, if `verify`):
   true Jaccard of candidate pairs on the shingle sets (minhash_verify.py).
4. `components` (one task): connected components, one keeper per cluster,
   decisions split by shard (minhash_components.py).

The applier then removes the others shard by shard with reason
`near_duplicate`. Keeper priority: most stars, then a known license, then
smallest id (as exact dedup).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lemur_data.stages import storage
from lemur_data.stages.base import (
    DocumentStage,
    GlobalContext,
    GlobalStage,
    Phase,
    ShardContext,
    StageResult,
    Task,
)
from lemur_data.stages.minhash_buckets import BucketPartition
from lemur_data.stages.minhash_components import Components
from lemur_data.stages.minhash_params import MinHashParams
from lemur_data.stages.minhash_shard import SignShard
from lemur_data.stages.minhash_verify import CheckPairs, ShipSets


def _part(i: int) -> str:
    return f"part-{i:04d}.parquet"


class MinHashApplier(DocumentStage):
    name = "minhash"
    Params = MinHashParams

    def __init__(self, params: MinHashParams, decisions_dir: str,
                 part_of_shard: dict[str, int]) -> None:
        super().__init__(params)
        self.decisions_dir = decisions_dir
        self.part_of_shard = part_of_shard

    def cache_key(self) -> str:
        return f"{super().cache_key()}:{self.decisions_dir}"

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        import pyarrow.dataset as ds  # here: ~0.2 s to import (pandas), a cost for the driver

        path = storage.join(self.decisions_dir, _part(self.part_of_shard[ctx.shard_id]))
        fs, local = storage.filesystem(path)
        drops = ds.dataset(local, format="parquet", filesystem=fs).to_table(
            filter=ds.field("shard") == ctx.shard_id, columns=["id", "kept_id", "cluster", "size"])
        decided = {row["id"]: row for row in drops.to_pylist()}
        reasons, details = [], []
        for doc_id in docs.column("id").to_pylist():
            row = decided.get(doc_id)
            reasons.append("near_duplicate" if row else None)
            details.append(f"near duplicate of {row['kept_id']} (cluster {row['cluster']}, "
                           f"{row['size']} documents)" if row else None)
        return StageResult(docs, pa.array(reasons, pa.string()), pa.array(details, pa.string()))


class MinHash(GlobalStage):
    name = "minhash"
    Params = MinHashParams

    def phases(self, ctx: GlobalContext) -> list[Phase]:
        p: MinHashParams = self.params  # type: ignore[assignment]
        work, parts = ctx.work_dir, range(p.partitions)
        shards = sorted(ctx.input_shards)
        seed = p.effective_seed(ctx.seed)

        def under(*names: str) -> str:
            return storage.join(work, *names)

        signing = Phase("signatures", [
            Task(shard, SignShard(ctx.input_shards[shard], index, work, shard, p, seed),
                 outputs=(under("meta", f"{shard}.parquet"),
                          *(under("bands", shard, _part(q)) for q in parts),
                          *(under("shingles", shard, _part(q)) for q in parts if p.verify)))
            for index, shard in enumerate(shards)])
        bucketing = Phase("buckets", [
            Task(f"part-{part:04d}", BucketPartition(
                tuple(under("bands", shard, _part(part)) for shard in shards),
                under("pairs", f"part-{part:04d}"), p.partitions, p.bucket_window),
                outputs=tuple(under("pairs", f"part-{part:04d}", f"qa-{q:04d}.parquet")
                              for q in parts))
            for part in parts])
        phases = [signing, bucketing]
        candidate_files: tuple[str, ...] = ()
        if p.verify:
            shingles = {q: tuple(under("shingles", shard, _part(q)) for shard in shards)
                        for q in parts}
            phases.append(Phase("verify_ship", [
                Task(f"part-{q:04d}", ShipSets(
                    tuple(under("pairs", f"part-{band:04d}", f"qa-{q:04d}.parquet")
                          for band in parts),
                    shingles[q], under("verify", f"from-{q:04d}"), p.partitions),
                     outputs=tuple(under("verify", f"from-{q:04d}", f"{kind}-{to:04d}.parquet")
                                   for kind in ("pairs", "sets") for to in parts))
                for q in parts]))
            phases.append(Phase("verify_check", [
                Task(f"part-{q:04d}", CheckPairs(
                    tuple(under("verify", f"from-{src:04d}", f"pairs-{q:04d}.parquet")
                          for src in parts),
                    tuple(under("verify", f"from-{src:04d}", f"sets-{q:04d}.parquet")
                          for src in parts),
                    shingles[q], under("edges", _part(q)), p.threshold),
                     outputs=(under("edges", _part(q)),))
                for q in parts]))
            edge_files = tuple(under("edges", _part(q)) for q in parts)
            candidate_files = tuple(under("verify", f"from-{src:04d}", f"pairs-{q:04d}.parquet")
                                    for src in parts for q in parts)
        else:
            edge_files = tuple(under("pairs", f"part-{band:04d}", f"qa-{q:04d}.parquet")
                               for band in parts for q in parts)
        phases.append(Phase("components", [Task("all", Components(
            edge_files, candidate_files,
            tuple(under("meta", f"{shard}.parquet") for shard in shards),
            tuple(shards), work, p.partitions),
            outputs=(under("clusters.json"),
                     *(under("decisions", _part(q)) for q in parts)))]))
        return phases

    def applier(self, ctx: GlobalContext) -> DocumentStage:
        p: MinHashParams = self.params  # type: ignore[assignment]
        part_of = {shard: i % p.partitions for i, shard in enumerate(sorted(ctx.input_shards))}
        return MinHashApplier(p, storage.join(ctx.work_dir, "decisions"), part_of)

    def summary(self, ctx: GlobalContext) -> dict[str, Any]:
        p: MinHashParams = self.params  # type: ignore[assignment]
        bands, rows = p.lsh_shape()
        clusters_path = storage.join(ctx.work_dir, "clusters.json")
        found = storage.read_json(clusters_path) if storage.exists(clusters_path) else {}
        return {"lsh": {"ngram": p.ngram, "permutations": p.permutations, "bands": bands,
                        "rows": rows, "threshold": p.threshold, "weights": list(p.weights()),
                        "seed": p.effective_seed(ctx.seed),
                        "scheme": p.scheme, "backend": p.backend, "tokenizer": p.tokenizer,
                        "verify": p.verify, "partitions": p.partitions,
                        "bucket_window": p.bucket_window},
                **found}
