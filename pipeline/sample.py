"""`sample:` / `build --sample`: a seeded subset of every source, for tuning a manifest.

Drawn by input unit, then by row:

- units: each source's units in the seeded order of `read: needed` (`unit_order`),
  taken until their listed size covers the target (a fraction of the source's bytes, or
  N documents);
- rows: within the units taken, a fraction keeps in each unit the share of its rows
  that brings the units down to the target (rounded, at least one); N documents are
  shared out over the units by their listed counts. Either way a unit keeps the rows
  whose seeded hash of their id is lowest.

Everything derives from the seed, the listing and the document ids, never from the
number of workers, so the same sample comes back on any cluster. Rows left out were
never read as far as the run is concerned: they are not counted as removed. The
sample is part of the manifest's fingerprint, so a sampled run's folder cannot be
resumed into by a full build, nor the other way round. Its mixture packs the share of
`total_tokens` that the sample reads of the corpus (`for_sample`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import xxhash

from ..stages.readers.common import InputUnit

if TYPE_CHECKING:
    from .manifest import Manifest

SampleValue = float | int
"""A fraction (0 < F < 1) of each source's bytes, or N (an integer >= 1) documents per
source."""

_SCALE = float(2**64)


def parse_sample(text: str) -> SampleValue:
    """`--sample` as given: `0.1` a fraction, `500` documents per source."""
    try:
        value: SampleValue = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is neither a fraction (0.1) nor a number of "
                             "documents (500)") from None
    return check_sample(value)


def check_sample(value: SampleValue) -> SampleValue:
    if isinstance(value, bool):
        raise ValueError("give a fraction (0 < F < 1) or a number of documents (N >= 1)")
    if isinstance(value, float):
        if value.is_integer() and value >= 1:
            return int(value)
        if not 0 < value < 1:
            raise ValueError(f"{value} is not a fraction between 0 and 1 (exclusive) nor a "
                             "whole number of documents")
        return value
    if value < 1:
        raise ValueError(f"{value} documents: give at least 1")
    return value


@dataclass(frozen=True)
class SampledUnit(InputUnit):
    """An input unit of a sampled run: the readers read it as the unit it was; the
    ingest task then keeps `share` of its rows, or `quota` rows (-1: no quota), those of
    lowest seeded hash."""

    share: float = 1.0
    quota: int = -1
    seed: int = 0

    def keep(self, table: pa.Table) -> pa.Table:
        """The rows of this unit in the sample, in their order: its quota, or `share` of
        its rows (rounded, at least one: a source of a dozen documents, the demo's
        notebooks, drew none in 28% of seeds when each row was kept with probability
        `share`, and the sample then never ran the stages made for it), those of lowest
        seeded hash."""
        if table.num_rows == 0 or (self.share >= 1.0 and self.quota < 0):
            return table
        scores = row_scores(table.column("id").to_pylist(), self.seed)
        order = sorted(range(len(scores)), key=lambda i: (scores[i], i))
        mask = [False] * len(scores)
        for i in order[:self.wanted(len(scores))]:
            mask[i] = True
        return table.filter(pa.array(mask, pa.bool_()))

    def wanted(self, rows: int) -> int:
        """How many of `rows` rows the sample keeps."""
        if self.quota >= 0:
            return min(self.quota, rows)
        return min(rows, max(1, math.floor(self.share * rows + 0.5))) if rows else 0


def row_scores(ids: list[str], seed: int) -> list[float]:
    """A seeded, uniform number in [0, 1) per document id."""
    return [xxhash.xxh3_64_intdigest(f"{seed}\x00sample\x00{doc_id}".encode()) / _SCALE
            for doc_id in ids]


def unit_order(units: list[InputUnit], seed: int) -> list[InputUnit]:
    """The seeded order in which a source's units are read, by `read: needed` rounds and
    by samples (ties: by unit id)."""
    return sorted(units, key=lambda u: (xxhash.xxh3_64_intdigest(
        f"{seed}\x00{u.shard_id}".encode()), u.shard_id))


def sample_units(units: dict[str, list[InputUnit]], value: SampleValue,
                 seed: int) -> dict[str, list[InputUnit]]:
    """The units a sample reads, per source, in listing order, each a `SampledUnit`."""
    out: dict[str, list[InputUnit]] = {}
    for name, source_units in units.items():
        order = unit_order(source_units, seed)
        chosen = _fraction(order, value, seed) if isinstance(value, float) \
            else _count(order, value, seed)
        out[name] = sorted(chosen, key=lambda u: u.index)
    return out


def _size(unit: InputUnit) -> int:
    # a reader that lists no sizes (python_object) still lists counts; else one per unit
    return unit.bytes_hint or unit.docs_hint or 1


def _fraction(order: list[InputUnit], share: float, seed: int) -> list[InputUnit]:
    target = share * sum(_size(u) for u in order)
    taken: list[InputUnit] = []
    covered = 0
    for unit in order:
        if taken and covered >= target:
            break
        taken.append(unit)
        covered += _size(unit)
    row_share = min(1.0, target / covered) if covered else 1.0
    return [_sampled(u, share=row_share, seed=seed) for u in taken]


def _count(order: list[InputUnit], docs: int, seed: int) -> list[InputUnit]:
    taken: list[InputUnit] = []
    covered = 0
    for unit in order:
        if taken and covered >= docs:
            break
        taken.append(unit)
        covered += max(unit.docs_hint, 1)
    # N shared out by the listed counts, largest remainder first (ties: seeded order)
    weights = [max(u.docs_hint, 1) for u in taken]
    exact = [docs * w / covered for w in weights] if covered else [0.0] * len(taken)
    quotas = [min(math.floor(x), w) for x, w in zip(exact, weights, strict=True)]
    rest = min(docs, covered) - sum(quotas)
    for i in sorted(range(len(taken)), key=lambda i: -(exact[i] - quotas[i]))[:max(rest, 0)]:
        quotas[i] += 1
    return [_sampled(u, quota=q, seed=seed) for u, q in zip(taken, quotas, strict=True)]


def _sampled(unit: InputUnit, share: float = 1.0, quota: int = -1, seed: int = 0) -> SampledUnit:
    fields = {k: getattr(unit, k) for k in ("source", "index", "payload", "docs_hint",
                                             "bytes_hint")}
    return SampledUnit(**fields, share=share, quota=quota, seed=seed)


def continuation(unit: InputUnit, index: int, payload: dict[str, Any],
                 bytes_hint: int) -> InputUnit:
    """A unit that reads input `unit` found past its plan (planner.Continuations): of
    the same kind, so a sample keeps the same share of its rows; a sample of N documents
    took its quota from `unit` (by its listed count) and takes none here."""
    quota = {"quota": 0} if isinstance(unit, SampledUnit) and unit.quota >= 0 else {}
    return replace(unit, index=index, payload=payload, docs_hint=0, bytes_hint=bytes_hint,
                   **quota)


def sample_filter(table: pa.Table, unit: InputUnit) -> pa.Table:
    """The ingest task's rows of `unit` in the run (all of them but in a sampled run)."""
    return unit.keep(table) if isinstance(unit, SampledUnit) else table


def _token_share(units: dict[str, list[InputUnit]], sampled: dict[str, list[InputUnit]],
                 value: SampleValue) -> float:
    """The share of the corpus a sample reads, by which its mixture is scaled
    (`for_sample`): F, or the documents N per source comes to over all those listed."""
    if isinstance(value, float):
        return value
    listed = sum(max(u.docs_hint, 1) for us in units.values() for u in us)
    taken = sum(max(u.quota, 0) for us in sampled.values() for u in us
                if isinstance(u, SampledUnit))
    return min(1.0, taken / listed) if listed else 1.0


def for_sample(manifest: Manifest, units: dict[str, list[InputUnit]],
               sampled: dict[str, list[InputUnit]]) -> Manifest:
    """The manifest a sampled run (`manifest.sample`, drawn as `sampled` from the listed
    `units`) plans with: its mixture's `total_tokens` times the share of the corpus the
    sample reads, so that the sample packs about the epochs the full run would (as far as
    the units drawn are like their source's others), rather than the full run's tokens
    out of a sample (the Lemur manifest's 90B tokens from a 0.1% sample: 180 GB of
    shards, each document repeated ~1,000 times). The run's fingerprint, manifest.json
    and stats.json keep the manifest as written."""
    if manifest.mixture is None or manifest.sample is None:
        return manifest
    share = _token_share(units, sampled, manifest.sample)
    if share >= 1.0:
        return manifest
    tokens = max(1.0, float(round(manifest.mixture.total_tokens * share)))  # whole tokens
    mixture = manifest.mixture.model_copy(update={"total_tokens": tokens})
    return manifest.model_copy(update={"mixture": mixture})


def describe(units: dict[str, list[InputUnit]], sampled: dict[str, list[InputUnit]],
             value: SampleValue, planned: Manifest | None = None) -> dict[str, Any]:
    """stats.json's `sample`: what the sample read of each source, as planned."""
    by_source = {}
    for name, all_units in units.items():
        taken = [u for u in sampled.get(name, []) if isinstance(u, SampledUnit)]
        entry: dict[str, Any] = {"units": len(taken), "of_units": len(all_units),
                                 "listed_bytes": sum(u.bytes_hint for u in taken),
                                 "of_bytes": sum(u.bytes_hint for u in all_units)}
        if isinstance(value, float):
            entry["row_share"] = round(taken[0].share, 6) if taken else 0.0
        else:
            entry["docs"] = sum(max(u.quota, 0) for u in taken)
        by_source[name] = entry
    out = {"value": value, "kind": "fraction" if isinstance(value, float) else "documents",
           "note": "a sample: not for training", "by_source": by_source}
    if planned is not None and planned.mixture is not None:
        out["mixture_total_tokens"] = planned.mixture.total_tokens  # see for_sample
    return out


def scaled(unit: SampledUnit) -> tuple[int, int]:
    """(docs, bytes) a sampled unit is expected to yield, from its listed hints."""
    if unit.quota >= 0:
        share = unit.quota / max(unit.docs_hint, 1)
        return unit.quota, int(unit.bytes_hint * min(share, 1.0))
    return unit.wanted(unit.docs_hint), int(unit.bytes_hint * unit.share)
