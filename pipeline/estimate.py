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

# MB/s per core, by stage (see the README's benchmark table for where each comes from).
RATES_MB_S: dict[str, float] = {
    "ingest": 40.0,
    "langid": 6.0,
    "quality": 8.0,
    "syntax": 1.9,
    "exact_dedup": 60.0,
    "minhash": 4.0,
    "decontaminate": 10.0,
    "pii": 10.0,
    "tokenize": 3.0,
    "mix": 50.0,
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
    if manifest.tokenizer or manifest.mixture or (manifest.output and manifest.output.megatron):
        names.append("tokenize")
    if manifest.mixture or (manifest.output and manifest.output.megatron):
        names.append("mix")
    return names


def _partitions(manifest: Manifest, stage: str) -> int:
    spec = next((s for s in manifest.stage_specs if s.name == stage), None)
    return int(getattr(spec.params, "partitions", 0) or 0) if spec else 0


def estimate(manifest: Manifest, input_bytes: int) -> list[StageCost]:
    docs = input_bytes / AVG_DOC_BYTES
    costs = []
    for stage in stage_names(manifest):
        rate = RATES_MB_S.get(stage, DEFAULT_RATE_MB_S)
        core_hours = input_bytes / 1e6 / rate / 3600
        disk = input_bytes * PARQUET_RATIO  # each step writes its kept shards
        memory = WORKER_BASE_MB
        if stage == "exact_dedup":
            disk = docs * 80
            memory += docs * 100 / max(_partitions(manifest, stage), 1) / 1e6
        elif stage == "minhash":
            permutations = 256
            disk = docs * permutations * 8
            memory += docs * permutations * 8 / max(_partitions(manifest, stage), 1) / 1e6
        elif stage == "tokenize":
            disk = input_bytes / 3.5 * 2 * 1.2  # token ids as uint16, parquet overhead
        elif stage == "mix" and manifest.mixture:
            disk = manifest.mixture.total_tokens * 2
        costs.append(StageCost(stage, input_bytes, core_hours, int(disk), memory))
    return costs


def nodes_for_a_day(costs: list[StageCost], cores_per_node: int, hours: float = 24) -> int:
    return max(1, math.ceil(sum(c.core_hours for c in costs) / (cores_per_node * hours)))
