"""`lemur-data diff RUN_A RUN_B`: what a manifest change did to the corpus.

Two runs over the same input are compared document by document: each document's fate
(kept, or the stage and reason that removed it) in A and in B. The documents whose
fate differs are counted per pair of fates and shown by example; the removals per
reason, the kept documents and the kept tokens per source, language and mixture
component are compared as totals. Runs that did not read the same documents are
refused with the difference named, since their fates cannot be paired.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow.compute as pc

from .inspect import examples, pick
from .rundir import KEPT, RunFolder

ABSENT = "absent"
"""A document one run has and the other does not: made by a stage (a repository
document) from files whose fates differ."""


class InputMismatchError(Exception):
    """The two runs did not read the same documents."""


def fate_name(row: dict[str, Any] | None) -> str:
    if row is None:
        return ABSENT
    return row["reason"] if row["outcome"] == "removed" else row["outcome"]


def read_ids(run: RunFolder) -> set[str]:
    """Ids of every document the run read (the first step's kept and removed)."""
    first = run.steps[0]
    ids = set(run.step_kept(first, ["id"]).column("id").to_pylist())
    return ids | set(run.removed(first, ["id"]).column("id").to_pylist())


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}
        for i, v in enumerate(value):
            out.update(_flat(v, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def manifest_changes(a: RunFolder, b: RunFolder) -> list[tuple[str, Any, Any]]:
    """(key path, value in A, value in B) for every manifest key that differs."""
    fa, fb = _flat(a.manifest["manifest"]), _flat(b.manifest["manifest"])
    return [(k, fa.get(k), fb.get(k)) for k in sorted(fa.keys() | fb.keys())
            if fa.get(k) != fb.get(k)]


def check_same_input(a: RunFolder, b: RunFolder) -> int:
    """The number of documents both read; InputMismatchError if they differ."""
    ids_a, ids_b = read_ids(a), read_ids(b)
    if ids_a == ids_b:
        return len(ids_a)
    only_a, only_b = ids_a - ids_b, ids_b - ids_a
    keys = ("sources", "sample", "seed", "shard")
    changed = [k for k, _, _ in manifest_changes(a, b) if k.split(".")[0].split("[")[0] in keys]
    paths = {r["id"]: r["path"] for r in a.fates.to_pylist() + b.fates.to_pylist()}
    example = sorted(only_a or only_b)[0]
    raise InputMismatchError(
        f"{a.run_dir} and {b.run_dir} did not read the same input: {len(only_a):,} documents "
        f"only in the first, {len(only_b):,} only in the second (e.g. {paths.get(example)!r}"
        f", id {example})" + (f"; their manifests differ in {', '.join(changed[:6])}"
                              if changed else "") + ". diff compares runs of one input: "
        "change a stage's parameters, not the sources, sample or seed")


@dataclass
class Diff:
    docs: int
    changes: list[tuple[str, Any, Any]]
    transitions: dict[tuple[str, str], int]
    per_reason: dict[str, tuple[int, int]]
    kept: tuple[int, int]
    tokens: dict[str, dict[str, tuple[int, int]]]
    examples: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    changed_ids: dict[tuple[str, str], list[str]] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        return {
            "documents_read": self.docs,
            "manifest_changes": [{"key": k, "a": x, "b": y} for k, x, y in self.changes],
            "fate_changes": [{"a": x, "b": y, "docs": n, "ids": self.changed_ids[(x, y)],
                              "examples": self.examples.get((x, y), [])}
                             for (x, y), n in self.transitions.items()],
            "removed_by_reason": {r: {"a": x, "b": y, "change": y - x}
                                  for r, (x, y) in self.per_reason.items()},
            "kept": {"a": self.kept[0], "b": self.kept[1], "change": self.kept[1] - self.kept[0]},
            "kept_tokens": {group: {k: {"a": x, "b": y, "change": y - x}
                                    for k, (x, y) in values.items()}
                            for group, values in self.tokens.items()}}


def _tokens(run: RunFolder, key: str) -> Counter[str]:
    kept = run.fates.filter(pc.equal(run.fates.column("outcome"), KEPT))
    out: Counter[str] = Counter()
    for group, tokens in zip(kept.column(key).to_pylist(), kept.column("tokens").to_pylist(),
                             strict=True):
        out[group or "unknown"] += tokens or 0
    return out


def _components(run: RunFolder) -> Counter[str]:
    components = (run.stats.get("mixture") or {}).get("components") or []
    return Counter({c["key"]: c.get("available_tokens", 0) for c in components})


def diff(a: RunFolder, b: RunFolder, per_group: int = 2, lines: int = 4) -> Diff:
    docs = check_same_input(a, b)
    fates_a = {r["id"]: r for r in a.fates.to_pylist()}
    fates_b = {r["id"]: r for r in b.fates.to_pylist()}
    moved: dict[tuple[str, str], list[str]] = {}
    for doc_id in sorted(fates_a.keys() | fates_b.keys()):
        x, y = fate_name(fates_a.get(doc_id)), fate_name(fates_b.get(doc_id))
        if x != y:
            moved.setdefault((x, y), []).append(doc_id)
    transitions = dict(sorted(((k, len(v)) for k, v in moved.items()),
                              key=lambda kv: (-kv[1], kv[0])))
    count_a = Counter(fate_name(r) for r in fates_a.values())
    count_b = Counter(fate_name(r) for r in fates_b.values())
    reasons = sorted(k for k in count_a.keys() | count_b.keys() if ":" in k)
    per_reason = {r: (count_a[r], count_b[r]) for r in reasons if count_a[r] != count_b[r]}
    tokens = {}
    for group, (ta, tb) in {"source": (_tokens(a, "source"), _tokens(b, "source")),
                            "lang": (_tokens(a, "lang"), _tokens(b, "lang")),
                            "component": (_components(a), _components(b))}.items():
        tokens[group] = {k: (ta[k], tb[k]) for k in sorted(ta.keys() | tb.keys())}
    result = Diff(docs, manifest_changes(a, b), transitions, per_reason,
                  (count_a[KEPT], count_b[KEPT]), tokens, changed_ids=moved)
    # examples: from the run that removed the document (else the one that kept it)
    for (x, y), ids in moved.items():
        in_b = y != KEPT and y != ABSENT
        run, fates = (b, fates_b) if in_b or x == ABSENT else (a, fates_a)
        rows = [fates[i] for i in ids if i in fates]
        chosen = pick(rows, ["outcome"], per_group, a.seed)
        shown = [r for _, members in chosen.values() for r in members]
        result.examples[(x, y)] = [{**e, "run": "b" if run is b else "a"}
                                   for e in examples(run, shown, lines)]
    return result


def as_text(d: Diff, a: RunFolder, b: RunFolder) -> str:
    out = [f"A {a.run_dir} (fingerprint {a.stats.get('fingerprint')})",
           f"B {b.run_dir} (fingerprint {b.stats.get('fingerprint')})",
           f"same input: {d.docs:,} documents read by both"]
    if d.changes:
        out.append("manifest changes:")
        out += [f"  {k}: {x!r} -> {y!r}" for k, x, y in d.changes]
    total = sum(d.transitions.values())
    out.append(f"documents whose fate differs: {total:,}")
    if d.transitions:
        width = max(len(x) for x, _ in d.transitions) + 2
        out += [f"  {x:<{width}} -> {y:<40} {n:>7,}" for (x, y), n in d.transitions.items()]
    if d.per_reason:
        out.append("removed per reason (A -> B):")
        out += [f"  {r:<48} {x:>7,} -> {y:>7,}  ({y - x:+,})"
                for r, (x, y) in d.per_reason.items()]
    out.append(f"kept documents: {d.kept[0]:,} -> {d.kept[1]:,} ({d.kept[1] - d.kept[0]:+,})")
    titles = {"source": "kept tokens by source", "lang": "kept tokens by language",
              "component": "tokens available per mixture component"}
    for group, values in d.tokens.items():
        changed = {k: v for k, v in values.items() if v[0] != v[1]}
        if changed:
            out.append(f"{titles[group]} (A -> B):")
            out += [f"  {k:<32} {x:>12,} -> {y:>12,}  ({y - x:+,})"
                    for k, (x, y) in changed.items()]
    from .show import as_text as example_text

    for (x, y), items in d.examples.items():
        out.append(f"examples of {x} -> {y}:")
        out += [f"  (from run {item['run'].upper()})\n" + example_text(item) for item in items]
    return "\n".join(out)
