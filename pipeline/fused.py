"""One Ray task per shard: read once, apply every document stage in order, write once.

The runner, not the stages, does the accounting here: each stage returns a
reason per document (null = keep), and this file splits kept from removed,
prefixes reasons with the stage name, and counts in/kept/removed per source,
kind, language and reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..stages import storage
from ..stages.base import DocumentStage, ShardContext, StageResult, in_scope
from ..stages.ingest import read_unit_more
from ..stages.readers.common import InputUnit, ReaderParams, SourceInfo
from .profile import Profilers, shard_profile
from .sample import sample_filter

# Stage instances built in this worker process, reused across shards.
_BUILT: dict[str, DocumentStage] = {}


@dataclass(frozen=True)
class IngestInput:
    reader: ReaderParams  # the source's validated `reader:` parameters
    source: SourceInfo
    unit: InputUnit


@dataclass(frozen=True)
class FusedShardTask:
    """Documents of one shard through a run of document stages."""

    shard_id: str
    input: IngestInput | str  # an input unit to ingest, or the parquet of the group before
    stages: list[DocumentStage]
    out_path: str
    removed_path: str
    ctx: ShardContext
    profile: bool = False  # the run's last document step: describe the kept documents
    profilers: Profilers = ()  # the run's stages, whose `profile` hooks add to it

    def __call__(self) -> dict[str, Any]:
        removed: list[pa.Table] = []
        counts: list[dict[str, Any]] = []
        more = None  # input found past the unit's plan: the runner plans units for it
        if isinstance(self.input, IngestInput):
            unit = self.input.unit
            read, more = read_unit_more(self.input.reader, self.input.source, unit)
            read = sample_filter(read, unit)
            docs = read.drop_columns(["reason", "detail"])
            docs = _account("ingest", docs, read.column("reason"), read.column("detail"),
                            removed, counts)
        else:
            docs = storage.read_parquet(self.input)
        for stage in self.stages:
            built = _built(stage)
            result = _apply_in_scope(built, docs, self.ctx)
            docs = _account(built.name, result.table, result.reasons, result.details,
                            removed, counts, built.count_columns, built.total_columns,
                            built.count_details)
        storage.write_parquet_atomic(self.out_path, docs)
        storage.write_parquet_atomic(self.removed_path, _removed_table(removed, docs.schema))
        summary: dict[str, Any] = {"shard": self.shard_id, "docs": docs.num_rows,
                                   "counts": counts}
        if more is not None:
            summary["more"] = more
        facts = {s.name: f for s in map(_built, self.stages) if (f := s.run_facts())}
        if facts:
            summary["facts"] = facts
        if self.profile:
            summary["profile"] = shard_profile(docs, self.profilers)
        return summary


def _removed_table(removed: list[pa.Table], kept: pa.Schema) -> pa.Table:
    """The step's removed documents in one schema for every shard of the step: the kept
    documents' columns, then `reason` and `detail`. A document removed before a later
    stage added its columns gets nulls there, so a removed/ folder reads as one dataset."""
    fields = [*kept, pa.field("reason", pa.string()), pa.field("detail", pa.string())]
    names = {f.name for f in fields}
    # Columns only removed documents have (no stage drops columns today): kept, by name.
    extra: dict[str, pa.Field] = {}
    for table in removed:
        for f in table.schema:
            if f.name not in names:
                extra.setdefault(f.name, f)
    fields += [extra[name] for name in sorted(extra)]
    schema = pa.schema(fields)
    tables = [pa.table([t.column(f.name).cast(f.type) if f.name in t.column_names
                        else pa.nulls(t.num_rows, f.type) for f in schema], schema=schema)
              for t in removed]
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _built(stage: DocumentStage) -> DocumentStage:
    key = stage.cache_key()
    if key not in _BUILT:
        stage.setup()
        _BUILT[key] = stage
    return _BUILT[key]


def _apply_in_scope(stage: DocumentStage, docs: pa.Table, ctx: ShardContext) -> StageResult:
    """Apply `stage` to the documents its `sources`/`kinds` select; others pass untouched."""
    mask = in_scope(docs, stage.params)
    selected = int(pc.sum(mask).as_py() or 0)
    if selected == docs.num_rows:
        return stage.apply(docs, ctx)
    positions = pa.array(range(docs.num_rows), pa.int64())
    inside, outside = pc.filter(positions, mask), pc.filter(positions, pc.invert(mask))
    result = (stage.apply(docs.take(inside), ctx) if selected
              else StageResult.keep_all(docs.take(inside)))
    passing = docs.take(outside)
    merged = pa.concat_tables([result.table, passing], promote_options="default")
    order = pc.sort_indices(pa.concat_arrays([inside, outside]))
    reasons = pa.concat_arrays([result.reasons.cast(pa.string()),
                                pa.nulls(len(outside), pa.string())]).take(order)
    details = None
    if result.details is not None:
        details = pa.concat_arrays([result.details.cast(pa.string()),
                                    pa.nulls(len(outside), pa.string())]).take(order)
    return StageResult(merged.take(order), reasons, details)


def _account(stage: str, docs: pa.Table, reasons: pa.Array | pa.ChunkedArray,
             details: pa.Array | pa.ChunkedArray | None, removed: list[pa.Table],
             counts: list[dict[str, Any]], flags: tuple[str, ...] = (),
             totals: tuple[str, ...] = (), by_detail: bool = False) -> pa.Table:
    """Split kept from removed and count both; returns the kept documents.

    `flags` are columns the stage added (e.g. syntax_checked) that counts are also
    grouped by, so stats can say how many documents a stage could not check; `totals`
    are columns summed per group (e.g. pii_emails: how many were redacted); `by_detail`
    counts each removed group's documents per detail too (decontaminate: per item).
    """
    reasons = _flat(reasons)
    if len(reasons) != docs.num_rows:
        raise RuntimeError(f"stage {stage} returned {len(reasons)} reasons for "
                           f"{docs.num_rows} documents")
    dropped = pc.is_valid(reasons)
    reasons = reasons.cast(pa.string())
    keys = ["source", "kind", "lang", "reason", *[f"flag:{name}" for name in flags]]
    table = pa.table({
        "source": docs.column("source"), "kind": docs.column("kind"),
        "lang": docs.column("lang").cast(pa.string()),
        "reason": pc.binary_join_element_wise(f"{stage}:", reasons, ""),  # null stays null
        **{f"flag:{name}": docs.column(name).cast(pa.string()) for name in flags},
        **{f"total:{name}": docs.column(name).cast(pa.int64()) for name in totals},
        "bytes": pc.binary_length(docs.column("text"))})
    grouped = table.group_by(keys, use_threads=False).aggregate(
        [([], "count_all"), ("bytes", "sum"), *[(f"total:{n}", "sum") for n in totals]])
    grouped = grouped.take(pc.sort_indices(grouped, [(k, "ascending", "at_end") for k in keys]))
    per_detail = _per_detail(table, keys, details) if by_detail else {}
    for row in grouped.to_pylist():
        entry = {"stage": stage, **{k: row[k] for k in keys if not k.startswith("flag:")},
                 "docs": row["count_all"], "bytes": row["bytes_sum"] or 0}
        if row["reason"] is not None and by_detail:
            entry["details"] = per_detail.get(tuple(row[k] for k in keys), {})
        if flags:
            entry["flags"] = {k[5:]: row[k] for k in keys if k.startswith("flag:")}
        if totals:
            entry["totals"] = {n: row[f"total:{n}_sum"] or 0 for n in totals}
        counts.append(entry)
    if int(pc.sum(dropped).as_py() or 0):
        gone = docs.filter(dropped)
        gone = gone.append_column("reason", pc.filter(table.column("reason"), dropped))
        detail = (pc.filter(_flat(details), dropped) if details is not None
                  else pa.nulls(gone.num_rows, pa.string()))
        removed.append(gone.append_column("detail", detail.cast(pa.string())))
    return docs.filter(pc.invert(dropped))


def _per_detail(table: pa.Table, keys: list[str],
                details: pa.Array | pa.ChunkedArray | None) -> dict[tuple, dict[str, int]]:
    """{group key: {detail: documents}} over the removed documents."""
    if details is None:
        return {}
    detail = _flat(details).cast(pa.string())
    removed = table.append_column("detail", detail).filter(pc.is_valid(table.column("reason")))
    out: dict[tuple, dict[str, int]] = {}
    for row in removed.group_by([*keys, "detail"], use_threads=False).aggregate(
            [([], "count_all")]).to_pylist():
        out.setdefault(tuple(row[k] for k in keys), {})[row["detail"] or ""] = row["count_all"]
    return {key: dict(sorted(value.items())) for key, value in out.items()}


def _flat(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
