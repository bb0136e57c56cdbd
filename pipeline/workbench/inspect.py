"""`lemur-data inspect --run-dir D`: examples of what a run removed or kept, by group.

Groups are the values of `--by` (default: the reason, which names its stage); each
shows `-n` documents chosen by a seeded hash of their id (the run's seed unless
`--seed`), so the same command shows the same examples. Each example has its id, path,
reason and detail, its first lines, and where the stage can say where its rule acted
(a syntax error, a benchmark match, a redaction, the copy it collapsed into), that
place marked.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from .hooks import locations
from .rundir import RunFolder, stage_of
from .show import FIRST_LINES, example


@dataclass
class Selection:
    """Which documents to show: filters (None: any) and the grouping."""

    by: list[str] = field(default_factory=lambda: ["reason"])
    outcome: str = "removed"
    stage: str | None = None
    reason: str | None = None
    source: str | None = None
    lang: str | None = None
    per_group: int = 3
    seed: int | None = None
    lines: int = FIRST_LINES


def _filtered(fates: pa.Table, sel: Selection) -> pa.Table:
    mask = pa.array([True] * fates.num_rows, pa.bool_())
    if sel.outcome != "all":
        mask = pc.and_(mask, pc.equal(fates.column("outcome"), sel.outcome))
    if sel.reason is not None:  # `max_line_length` or `quality:max_line_length`
        reasons = fates.column("reason")
        full = pc.equal(reasons, sel.reason)
        rule = pc.ends_with(pc.fill_null(reasons, ""), ":" + sel.reason)
        mask = pc.and_(mask, pc.or_(pc.fill_null(full, False), rule))
    if sel.stage is not None:
        mask = pc.and_(mask, pc.starts_with(pc.fill_null(fates.column("reason"), ""),
                                            sel.stage + ":"))
    for key in ("source", "lang"):
        value = getattr(sel, key)
        if value is not None:
            mask = pc.and_(mask, pc.fill_null(pc.equal(fates.column(key), value), False))
    return fates.filter(mask)


def group_key(row: dict[str, Any], by: list[str]) -> tuple[str, ...]:
    values = []
    for key in by:
        if key == "stage":
            values.append(stage_of(row.get("reason")) or row["outcome"])
        elif key == "reason":
            values.append(row.get("reason") or row["outcome"])
        else:
            values.append(str(row.get(key) or "-"))
    return tuple(values)


def pick(rows: list[dict[str, Any]], by: list[str], per_group: int,
         seed: int) -> dict[tuple[str, ...], tuple[int, list[dict[str, Any]]]]:
    """{group: (documents in it, the `per_group` of lowest seeded hash)}, groups sorted."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(group_key(row, by), []).append(row)
    out = {}
    for key in sorted(groups):
        members = groups[key]
        chosen = sorted(members, key=lambda r: (xxhash.xxh3_64_intdigest(
            f"{seed}\x00inspect\x00{r['id']}".encode()), r["id"]))[:per_group]
        out[key] = (len(members), chosen)
    return out


def stage_entry(run: RunFolder, stage: str | None) -> dict[str, Any]:
    return next((s for s in run.stats.get("stages") or [] if s["name"] == stage), {})


def examples(run: RunFolder, rows: list[dict[str, Any]],
             lines: int = FIRST_LINES) -> list[dict[str, Any]]:
    """The shown form of these fate rows (text read for them only), in their order."""
    docs = run.texts(rows)
    out = []
    for row in rows:
        doc = docs.get(row["id"])
        stage = stage_of(row.get("reason"))
        spans = []
        if doc and stage:  # where the rule that removed it acted
            spans = locations(stage, doc, stage_entry(run, stage))
        elif doc:  # a kept document: where any stage changed or flagged it (redactions)
            for entry in run.stats.get("stages") or []:
                spans += locations(entry["name"], doc, entry)
        out.append(example(row, doc, spans, lines))
    return out


def inspect(run: RunFolder, sel: Selection) -> Iterator[tuple[tuple[str, ...], int,
                                                               list[dict[str, Any]]]]:
    """(group, documents in the group, examples) per group."""
    rows = _filtered(run.fates, sel).to_pylist()
    seed = run.seed if sel.seed is None else sel.seed
    chosen = pick(rows, sel.by, sel.per_group, seed)
    shown = examples(run, [r for _, members in chosen.values() for r in members], sel.lines)
    by_id = {item["id"]: item for item in shown}
    for key, (count, members) in chosen.items():
        yield key, count, [by_id[r["id"]] for r in members]
