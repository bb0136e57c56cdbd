"""What a full run costs: core-hours, disk and memory per stage, and nodes for a day.

Rates are per-core throughputs measured by the benchmarks in tests/bench/ on this
project's reference machine (2-core x86_64, 2026-11-30; docs/benchmarks.md).
Every stage is charged for the whole input (an upper bound: in practice each
filter shrinks what the next one reads), so the answer errs on the safe side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lemur_data.pipeline.manifest import Manifest
from lemur_data.stages.registry import STAGE_INFO

# stage rates (MB/s per core) live in stages/registry.py with the other facts of a stage
DEFAULT_RATE_MB_S = 5.0
WORKER_BASE_MB = 900.0  # a Ray worker with parsers and models loaded (bench_memory.py)
PARQUET_RATIO = 0.35  # zstd parquet bytes per text byte, measured on the demo output
AVG_DOC_BYTES = 5_000  # The Stack / RefinedWeb are both around 3-8 KB per document


@dataclass(frozen=True)
class StageCost:
    stage: str
    input_bytes: int
    core_hours: float
    disk_bytes: int
    worker_memory_mb: float


def stage_names(manifest: Manifest) -> list[str]:
    names = ["ingest", *[spec.name for spec in manifest.stage_specs]]
    if manifest.tokenizes:
        names.append("tokenize")
    if manifest.packs:
        names.append("mix")
    return names


def _is_global(stage: str) -> bool:
    return stage in STAGE_INFO and STAGE_INFO[stage].is_global


def _partitions(manifest: Manifest, stage: str) -> int:
    spec = next((s for s in manifest.stage_specs if s.name == stage), None)
    return int(getattr(spec.params, "partitions", 0) or 0) if spec else 0


def estimate(manifest: Manifest, bytes_by_kind: dict[str, int]) -> list[StageCost]:
    """Cost of each stage for `bytes_by_kind` ({"code": n, "text": m}) of input."""
    input_bytes = sum(bytes_by_kind.values())
    docs = input_bytes / AVG_DOC_BYTES
    costs = []
    names = stage_names(manifest)
    # a documents step ends before each global stage and at the end; a global stage
    # directly followed by another opens a step holding only its applier
    writes = {name for i, name in enumerate(names)
              if i + 1 == len(names) or _is_global(names[i + 1])}
    for stage in names:
        info = STAGE_INFO.get(stage)
        rates = dict(zip(("code", "text"), info.rate_mb_s, strict=True)) if info else {}
        core_hours = sum(size / 1e6 / rates.get(kind, DEFAULT_RATE_MB_S) / 3600
                         for kind, size in bytes_by_kind.items())
        # a fused step writes its kept shards once, after its last document stage
        disk = input_bytes * PARQUET_RATIO if stage in writes else 0
        memory = WORKER_BASE_MB
        applier_step = input_bytes * PARQUET_RATIO if _is_global(stage) and stage in writes else 0
        if stage == "exact_dedup":
            disk = docs * 80 + applier_step
            memory += docs * 100 / max(_partitions(manifest, stage), 1) / 1e6
        elif stage == "minhash":
            permutations = 256
            disk = docs * permutations * 8 + applier_step
            memory += docs * permutations * 8 / max(_partitions(manifest, stage), 1) / 1e6
        elif stage == "tokenize":
            disk = input_bytes / 3.5 * 2 * 1.2  # token ids as uint16, parquet overhead
        elif stage == "mix" and manifest.mixture:
            disk = manifest.mixture.total_tokens * 2
        costs.append(StageCost(stage, input_bytes, core_hours, int(disk), memory))
    return costs


def nodes_for_a_day(costs: list[StageCost], cores_per_node: int, hours: float = 24) -> int:
    return max(1, math.ceil(sum(c.core_hours for c in costs) / (cores_per_node * hours)))


@dataclass(frozen=True)
class EarlierReads:
    """What deduplicating against one earlier run reads of its index."""

    stage: str
    run: str
    docs: int
    bytes_read: int
    """Read in full, once per run: the exact hashes, or the MinHash band buckets."""
    bytes_candidates: int
    """Read only in part, by row groups holding candidates: ids and shingle sets (an
    upper bound: all of them)."""


def _folder_bytes(folder: str) -> int:
    from lemur_data.stages import storage

    fs, local = storage.filesystem(folder)
    return sum(fs.du(local, total=False).values()) if fs.exists(local) else 0


def earlier_reads(manifest: Manifest) -> list[EarlierReads]:
    """The extra reads of the dedup stages' `against` runs (their index sizes)."""
    from lemur_data.stages import storage
    from lemur_data.stages.incremental.index import IndexFiles, read_index

    out = []
    for spec in manifest.stage_specs:
        for run in getattr(spec.params, "against", None) or []:
            root = IndexFiles(run).root
            section = "exact" if spec.name == "exact_dedup" else "minhash"
            docs = int((read_index(run).get(section) or {}).get("docs", 0))
            if section == "exact":
                full, partial = _folder_bytes(storage.join(root, "exact")), 0
            else:
                full = _folder_bytes(storage.join(root, "minhash", "bands"))
                partial = (_folder_bytes(storage.join(root, "minhash", "docs"))
                           + _folder_bytes(storage.join(root, "minhash", "shingles")))
            out.append(EarlierReads(spec.name, run, docs, full, partial))
    return out
