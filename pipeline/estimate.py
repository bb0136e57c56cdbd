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

from ..stages.base import StageParams, sources_in_scope
from ..stages.registry import STAGE_INFO
from .budget import KEPT_SHARE, PILOT_SHARE, TOKEN_BYTES
from .manifest import Manifest

# stage rates (MB/s per core) live in stages/registry.py with the other facts of a stage
DEFAULT_RATE_MB_S = 5.0
WORKER_BASE_MB = 900.0  # a Ray worker with parsers and models loaded (bench_memory.py)
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


def _is_global(stage: str) -> bool:
    return stage in STAGE_INFO and STAGE_INFO[stage].is_global


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
    writes = {i for i in range(len(names)) if i + 1 == len(names) or _is_global(names[i + 1])}
    for i, (stage, params) in enumerate(stages):
        info = STAGE_INFO.get(stage)
        rates: dict[str, float] = (dict(zip(("code", "text"), info.rate_mb_s, strict=True))
                                   if info else {})
        scoped = _scoped_bytes(manifest, params, bytes_by_source)
        input_bytes = sum(scoped.values())
        docs = input_bytes / AVG_DOC_BYTES
        core_hours = sum(size / 1e6 / rates.get(kind, DEFAULT_RATE_MB_S) / 3600
                         for kind, size in scoped.items())
        # a fused step writes its kept shards once, after its last document stage: all
        # documents, in the stage's scope or not
        written = total_bytes * PARQUET_RATIO
        disk = written if i in writes else 0
        memory = WORKER_BASE_MB
        applier_step = written if _is_global(stage) and i in writes else 0
        partitions = max(int(getattr(params, "partitions", 0) or 0), 1)
        if stage == "exact_dedup":
            disk = docs * 80 + applier_step
            memory += docs * 100 / partitions / 1e6
        elif stage == "minhash":
            permutations = 256
            disk = docs * permutations * 8 + applier_step
            memory += docs * permutations * 8 / partitions / 1e6
        elif stage == "tokenize":
            disk = input_bytes / 3.5 * 2 * 1.2  # token ids as uint16, parquet overhead
        elif stage == "mix" and manifest.mixture:
            disk = manifest.mixture.total_tokens * 2
        costs.append(StageCost(stage, input_bytes, core_hours, int(disk), memory))
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


def _folder_bytes(folder: str) -> int:
    from ..stages import storage

    fs, local = storage.filesystem(folder)
    sizes: dict[str, int] = fs.du(local, total=False) if fs.exists(local) else {}
    return sum(sizes.values())


def earlier_reads(manifest: Manifest) -> list[EarlierReads]:
    """The extra reads of the dedup stages' `against` runs (their index sizes)."""
    from ..stages import storage
    from ..stages.incremental.index import IndexFiles, read_index

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
