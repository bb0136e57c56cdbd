"""`mixture.read: needed`: read only the prefix of each source that the mixture will use.

Each source's input units get a seeded order (a hash of seed and unit id, so the
order depends on neither the listing's order nor the workers). A run goes in
rounds, each over a prefix of every source's order:

- round 0, the pilot: a sample of each source sized from the mixture's need (a
  quarter of the bytes the source is expected to need at the priors TOKEN_BYTES
  and KEPT_SHARE, at least one unit; or, with `pilot_units`, max(pilot_units, 1%
  of the units)), through the first step and tokenize only (global stages see a
  round's whole prefix, and the pilot's work after the first step would be redone
  by the next round anyway), so at least one more round follows it;
- after each round, the kept tokens per component are known (the mix's `split`
  phase counts them per shard). If every component has its target, or every
  source feeding a short component is read whole, that round is the last one.
  Otherwise each source gets the shortest prefix whose expected yield (that
  round's kept tokens per input byte, times the bytes of the prefix) covers its
  components' targets x (1 + read_margin); a short component's sources grow by
  at least one unit, so rounds always end.

Prefixes only grow, and every decision is a function of the manifest, the input
and the realized yields, which are themselves deterministic: any worker count,
and a killed run resumed, take the same rounds to the same bytes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..stages.readers.common import InputUnit
from .manifest import Manifest

TOKEN_BYTES = 3.5  # text bytes per token (Llama-style tokenizers on code and English)
# Kept bytes per input byte through every stage, assumed before anything is read (the
# pilot's size, `plan`'s `read: needed` estimate): a build measures it on its pilot.
# Web text loses the most to language, quality and near-dup filters; The Stack dedup is
# cleaner.
KEPT_SHARE = {"code": 0.6, "text": 0.5}
PILOT_SHARE = 0.01  # with pilot_units: the pilot reads at least 1% of every source's units
PILOT_NEED_SHARE = 0.25  # without: a quarter of what each source is expected to need
PILOT_UNITS_WITHOUT_HINTS = 4  # units of unknown size: the fixed count it used to be


def pilot_counts(manifest: Manifest, units: Mapping[str, list[InputUnit]]) -> dict[str, int]:
    """Round 0's prefix per source (in its seeded order `units`).

    With `pilot_units` set: at least that many units or 1%. Without (the default): a
    sample sized from the mixture's need, PILOT_NEED_SHARE of the bytes the source is
    expected to give its components (`expected_need_bytes`), at least one unit. The
    first step's work on the pilot's units is every later round's too (its outputs
    are not scoped to a round), so a pilot near the need wastes little of it."""
    assert manifest.mixture is not None
    least = manifest.mixture.pilot_units
    hinted = all(u.bytes_hint > 0 for us in units.values() for u in us)
    if least is None and hinted:
        need = expected_need_bytes(manifest, units)
        return {name: _prefix_for([float(u.bytes_hint) for u in us], 0.0,
                                  goal=PILOT_NEED_SHARE * need.get(name, 0.0)) if us else 0
                for name, us in units.items()}
    least = least or PILOT_UNITS_WITHOUT_HINTS
    return {name: min(len(us), max(least, math.ceil(PILOT_SHARE * len(us))))
            for name, us in units.items()}


def expected_need_bytes(manifest: Manifest, units: Mapping[str, list[InputUnit]]
                        ) -> dict[str, float]:
    """Input bytes each source is expected to need before any is read: its components'
    targets x (1 + read_margin) at TOKEN_BYTES bytes per token and KEPT_SHARE of the
    bytes kept, a component's target shared among the sources that may feed it by
    their sizes."""
    assert manifest.mixture is not None
    weights = manifest.mixture.weights
    size = {name: float(sum(u.bytes_hint for u in us)) for name, us in units.items()}
    possible = {s.name: possible_keys(s.name, s.kind, s.lang, weights)
                for s in manifest.sources}
    need: dict[str, float] = defaultdict(float)
    for key, target in targets(manifest).items():
        feeders = [name for name in units if key in possible.get(name, set())]
        total = sum(size[name] for name in feeders)
        for name in feeders:
            share = size[name] / total if total else 1 / len(feeders)
            kept = KEPT_SHARE.get(manifest.source(name).kind, 1.0)
            need[name] += (target * (1 + manifest.mixture.read_margin) * TOKEN_BYTES
                           / kept * share)
    return dict(need)


def targets(manifest: Manifest) -> dict[str, int]:
    """Target tokens per component, as the mix's plan computes them (stages/mix/plan.py)."""
    assert manifest.mixture is not None
    weights = manifest.mixture.weights
    total = sum(weights.values())
    return {key: round(manifest.mixture.total_tokens * weight / total)
            for key, weight in sorted(weights.items())}


def possible_keys(name: str, kind: str, lang: str | None, weights: Mapping[str, Any]) -> set[str]:
    """Weight keys documents of this source can count for (their most specific match:
    `source:lang`, `source`, `kind:lang`, `kind`; a fixed `lang` leaves one)."""
    if lang is not None:
        first = next((k for k in (f"{name}:{lang}", name, f"{kind}:{lang}", kind)
                      if k in weights), None)
        return {first} if first else set()
    keys = {k for k in weights if k.split(":", 1)[0] == name}
    if name not in weights:  # a document of a detected language may fall through to kind
        keys |= {k for k in weights if k.split(":", 1)[0] == kind}
    return keys


@dataclass
class RoundResult:
    """What one round read and kept, per source."""

    counts: dict[str, int]  # units read (a prefix of the seeded order)
    input_bytes: dict[str, int]  # text bytes the read units gave ingest
    tokens: dict[str, dict[str, int]]  # source -> component key -> kept tokens
    targets: dict[str, int]  # component key -> target tokens

    def yield_of(self, source: str) -> float:
        """Kept tokens (every component) per input byte read."""
        size = self.input_bytes.get(source, 0)
        return sum(self.tokens.get(source, {}).values()) / size if size else 0.0


def tokens_by_source(split_tasks: list[str], split_summaries: list[dict[str, Any]],
                     source_of: Mapping[str, str]) -> dict[str, dict[str, int]]:
    """Kept tokens per source and component, from the mix's split summaries."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for shard, summary in zip(split_tasks, split_summaries, strict=True):
        for key, count in summary["tokens"].items():
            out[source_of[shard]][key] += count
    return {s: dict(c) for s, c in out.items()}


def ingest_bytes(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Text bytes each source gave ingest (what `in` counts at the first stage)."""
    out: dict[str, int] = defaultdict(int)
    for row in rows:
        if row["stage"] == "ingest":
            out[row["source"]] += row["bytes"]
    return dict(out)


def _predicted_sizes(order: list[InputUnit], read: int, read_bytes: int) -> list[float]:
    """Expected input bytes of each unit: its size hint, or the mean of the units read."""
    if order and all(u.bytes_hint > 0 for u in order):
        return [float(u.bytes_hint) for u in order]
    mean = read_bytes / read if read else 1.0
    return [mean] * len(order)


def next_counts(manifest: Manifest, orders: Mapping[str, list[InputUnit]],
                result: RoundResult) -> dict[str, int] | None:
    """The next round's prefix lengths, or None when this round is the last."""
    assert manifest.mixture is not None
    margin = manifest.mixture.read_margin
    possible = {s.name: possible_keys(s.name, s.kind, s.lang, manifest.mixture.weights)
                for s in manifest.sources}
    whole = {name: result.counts[name] >= len(orders[name]) for name in orders}
    short = []
    for key, target in result.targets.items():
        have = sum(by_key.get(key, 0) for by_key in result.tokens.values())
        feeders = _feeders(key, result, possible)
        if have < target and not all(whole[s] for s in feeders):
            short.append(key)
    if not short:
        return None
    counts = dict(result.counts)
    for key, target in result.targets.items():
        feeders = _feeders(key, result, possible)
        sizes = {s: _predicted_sizes(orders[s], result.counts[s], result.input_bytes.get(s, 0))
                 for s in feeders}
        # expected kept tokens if the whole source were read, at this round's yield
        expected = {s: result.tokens.get(s, {}).get(key, 0)
                    / max(result.input_bytes.get(s, 0), 1) * sum(sizes[s]) for s in feeders}
        total = sum(expected.values())
        # every source of the component reads the same share of itself, so the mix
        # within the component is the one `read: all` would have given
        share = target * (1 + margin) / total if total else math.inf
        for s in feeders:
            need = _prefix_for(sizes[s], share)
            if key in short and not whole[s]:
                need = max(need, result.counts[s] + 1)
            counts[s] = max(counts[s], need)
    return counts


def _feeders(key: str, result: RoundResult, possible: Mapping[str, set[str]]) -> list[str]:
    """Sources that gave the component tokens, and those that could: a pilot may not
    have met a source's documents of this component yet."""
    gave = {s for s, by_key in result.tokens.items() if by_key.get(key, 0) > 0}
    return sorted(gave | {s for s, keys in possible.items() if key in keys})


def _prefix_for(sizes: list[float], share: float, goal: float | None = None) -> int:
    """Fewest units (in order, at least one) holding `share` of the source's expected
    bytes, or `goal` bytes."""
    if goal is None:
        if share >= 1:
            return len(sizes)
        goal = share * sum(sizes)
    running = 0.0
    for n, size in enumerate(sizes, start=1):
        running += size
        if running >= goal:
            return n
    return len(sizes)


def read_stats(manifest: Manifest, orders: Mapping[str, list[InputUnit]],
               pilot: RoundResult, final: RoundResult, rounds: int) -> dict[str, Any]:
    """stats.json `read`: per source what was read and not, and pilot vs realized yield.

    Units not read are not "removed": in = kept + removed counts only what was read."""
    assert manifest.mixture is not None
    sources = {}
    for name, order in orders.items():
        read = final.counts[name]
        not_read = order[read:]
        hinted = all(u.bytes_hint > 0 for u in order)
        total = sum(u.bytes_hint for u in order)
        fraction = (sum(u.bytes_hint for u in order[:read]) / total if hinted and total
                    else read / len(order) if order else 1.0)
        sources[name] = {
            "units": len(order), "units_read": read, "units_not_read": len(not_read),
            "bytes_read": final.input_bytes.get(name, 0),
            # bytes of units never opened are their listing's size hints (0: none known)
            "bytes_not_read": sum(u.bytes_hint for u in not_read),
            "fraction_read": round(fraction, 6),
            "pilot_units": pilot.counts[name],
            "pilot_yield_tokens_per_byte": round(pilot.yield_of(name), 6),
            "realized_yield_tokens_per_byte": round(final.yield_of(name), 6),
        }
    return {"mode": "needed", "read_margin": manifest.mixture.read_margin,
            "pilot_units": manifest.mixture.pilot_units, "rounds": rounds,
            "final_round": f"rounds/{rounds - 1}", "sources": sources}
