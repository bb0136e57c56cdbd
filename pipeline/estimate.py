"""What a full run costs: core-hours, disk and memory per stage, and nodes for a day.

Rates are per-core throughputs measured by the benchmarks in tests/bench/ on this
project's reference machine (2-core x86_64, 2026-11-30; README has the table).
Every stage is charged for the whole input (an upper bound: in practice each
filter shrinks what the next one reads), so the answer errs on the safe side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lemur_data.pipeline.manifest import Manifest
from lemur_data.stages.base import GlobalStage
from lemur_data.stages.registry import STAGES

# MB/s per core, by stage and document kind, measured by tests/bench/ (README):
# bench_filters.py (langid 6.2 text; code quality 35; text quality 0.8 with datatrove's
# Gopher/C4/FineWeb rules), bench_syntax.py (1.9), bench_minhash.py (58 for signatures;
# ~20 with buckets, verification and components), bench_decontam_pii.py (4.5 and 15),
# bench_tokenize.py and the demo's cpu_seconds for ingest, dedup and tokenize.
# A stage that skips a kind (syntax on text, langid on code) costs ~nothing there.
RATES_MB_S: dict[str, dict[str, float]] = {
    "ingest": {"code": 40.0, "text": 40.0},
    "langid": {"code": 500.0, "text": 6.2},
    "quality": {"code": 35.0, "text": 0.8},
    "syntax": {"code": 1.9, "text": 1000.0},
    "exact_dedup": {"code": 60.0, "text": 60.0},
    "minhash": {"code": 20.0, "text": 20.0},
    "decontaminate": {"code": 4.5, "text": 4.5},
    "pii": {"code": 15.0, "text": 15.0},
    "tokenize": {"code": 3.0, "text": 3.0},
    "mix": {"code": 50.0, "text": 50.0},
}
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
    return stage == "mix" or (stage in STAGES and issubclass(STAGES[stage], GlobalStage))


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
        rates = RATES_MB_S.get(stage, {})
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
