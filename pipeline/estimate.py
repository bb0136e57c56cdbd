"""What a full run costs: core-hours, disk and memory per stage, and nodes for a day.

Rates are per-core throughputs measured by the benchmarks in tests/bench/ on this
project's reference machine (2-core x86_64, 2026-11-30; docs/benchmarks.md).
Every stage is charged for the whole input of the sources in its scope (its
`sources`/`kinds`; all of them by default), not for what earlier filters leave (an
upper bound: in practice each filter shrinks what the next one reads), so the answer
errs on the safe side. Disk for a step's kept shards counts every document, since
documents outside a stage's scope pass through it and are written too.
With `mixture.read: needed` the input is what the mixture is expected to use
(`read_fractions`); a build measures the yield instead, and may read a little more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..stages.base import GlobalStage, StageParams, sources_in_scope
from ..stages.hooks import CostInput
from ..stages.registry import is_global, stage_class, stage_hooks
from .budget import KEPT_SHARE, PILOT_SHARE, TOKEN_BYTES
from .manifest import Manifest

# A stage's rate (MB/s per core) and what it holds on disk and in memory are its `cost`
# hook (stages/hooks.py), in the stage's module.
PARQUET_RATIO = 0.35  # zstd parquet bytes per text byte, measured on the demo output
AVG_DOC_BYTES = 5_000  # The Stack / RefinedWeb are both around 3-8 KB per document
# TOKEN_BYTES and KEPT_SHARE (pipeline/budget.py): the priors `plan` and the pilot share.


@dataclass(frozen=True)
class StageCost:
    stage: str
    input_bytes: int
    core_hours: float
    disk_bytes: int
    worker_memory_mb: float


def _stages(manifest: Manifest) -> list[tuple[str, StageParams | None]]:
    """Every stage of a run in order, with its manifest parameters (None: implicit)."""
    stages: list[tuple[str, StageParams | None]] = [("ingest", None)]
    stages += [(spec.name, spec.params) for spec in manifest.stage_specs]
    if manifest.tokenizes:
        stages.append(("tokenize", None))
    if manifest.packs:
        stages.append(("mix", None))
    return stages


def _scoped_bytes(manifest: Manifest, params: StageParams | None,
                  bytes_by_source: dict[str, int]) -> dict[str, int]:
    """Bytes per kind of the sources a stage applies to (all sources without params)."""
    kind_of = {s.name: s.kind for s in manifest.sources}
    names = (sources_in_scope(params.sources, params.kinds, kind_of) if params is not None
             else list(kind_of))
    by_kind = {"code": 0, "text": 0}
    for name in names:
        by_kind[kind_of[name]] += int(bytes_by_source.get(name, 0))
    return by_kind


def estimate(manifest: Manifest, bytes_by_source: dict[str, int]) -> list[StageCost]:
    """Cost of each stage for `bytes_by_source` (source name -> input bytes)."""
    total_bytes = sum(int(bytes_by_source.get(s.name, 0)) for s in manifest.sources)
    costs = []
    stages = _stages(manifest)
    names = [name for name, _ in stages]
    # a documents step ends before each global stage and at the end; a global stage
    # directly followed by another opens a step holding only its applier
    writes = {i for i in range(len(names)) if i + 1 == len(names) or is_global(names[i + 1])}
    for i, (stage, params) in enumerate(stages):
        scoped = _scoped_bytes(manifest, params, bytes_by_source)
        input_bytes = sum(scoped.values())
        # a fused step writes its kept shards once, after its last document stage: all
        # documents, in the stage's scope or not
        written = total_bytes * PARQUET_RATIO if i in writes else 0
        size = CostInput(scoped, input_bytes / AVG_DOC_BYTES, written,
                         manifest.mixture.total_tokens if manifest.mixture else None)
        cost = stage_hooks(stage).cost(params, size)
        costs.append(StageCost(stage, input_bytes, cost.core_hours, int(cost.disk_bytes),
                               cost.memory_mb))
    return costs


def read_fractions(manifest: Manifest, bytes_by_source: dict[str, int]) -> dict[str, float]:
    """Share of each source `read: needed` is expected to read (1.0: all of it).

    A source counts for the most specific weight key that names it (`source:lang`,
    `source`, `kind:lang`, `kind`); every source of a component reads the same share,
    enough for target x (1 + read_margin) at the assumed KEPT_SHARE and TOKEN_BYTES.
    """
    mixture = manifest.mixture
    if mixture is None or mixture.read != "needed":
        return {s.name: 1.0 for s in manifest.sources}
    total_weight = sum(mixture.weights.values())
    component = {}
    for s in manifest.sources:
        keys = [f"{s.name}:{s.lang}", s.name, f"{s.kind}:{s.lang}", s.kind]
        component[s.name] = next((k for k in keys if k in mixture.weights), None)
    available: dict[str, float] = {}
    for s in manifest.sources:
        key = component[s.name]
        if key is not None:
            tokens = bytes_by_source.get(s.name, 0) * KEPT_SHARE[s.kind] / TOKEN_BYTES
            available[key] = available.get(key, 0.0) + tokens
    fractions = {}
    for s in manifest.sources:
        key = component[s.name]
        if key is None or not available.get(key):
            fractions[s.name] = 1.0
            continue
        target = mixture.total_tokens * mixture.weights[key] / total_weight
        # the pilot reads at least its share of every source
        fractions[s.name] = min(1.0, max(PILOT_SHARE, target * (1 + mixture.read_margin)
                                         / available[key]))
    return fractions


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


def earlier_reads(manifest: Manifest) -> list[EarlierReads]:
    """The extra reads of the dedup stages' `against` runs (their `index_reads` hook)."""
    out = []
    for spec in manifest.stage_specs:
        cls = stage_class(spec.name)
        if issubclass(cls, GlobalStage):
            out += [EarlierReads(spec.name, r.run, r.docs, r.bytes_read, r.bytes_candidates)
                    for r in cls(spec.params).index_reads()]
    return out
