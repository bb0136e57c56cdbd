"""max_lines: removes documents with more lines than a limit (generated tables, minified
bundles and data dumps are long; The Stack's near-dedup keeps them otherwise).

The worked example of docs/development.md ("Adding a stage"): the whole stage is this
module, its line in stages/registry.py, tests/test_max_lines.py and its section of
docs/stages.md. Its card line (`about`), its cost (`rate_mb_s`) and its figure in
stats.json (`stats_figures`) are hooks of the stage contract (stages/hooks.py).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import PositiveInt

from .base import DocumentStage, ShardContext, StageParams, StageResult
from .hooks import StatsEntry


class MaxLinesParams(StageParams):
    max_lines: PositiveInt = 100_000
    """Documents with more lines are removed as `max_lines:too_many_lines`."""


def line_counts(text: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Lines of each text: its newlines, plus one for a last line without one."""
    newlines = pc.count_substring(text, "\n")
    open_end = pc.and_(pc.greater(pc.binary_length(text), 0),
                       pc.invert(pc.ends_with(text, "\n")))
    counts = pc.add(newlines, pc.cast(open_end, pa.int32()))
    return counts.combine_chunks() if isinstance(counts, pa.ChunkedArray) else counts


class MaxLines(DocumentStage[MaxLinesParams]):
    name = "max_lines"
    about = "removes documents with more lines than `max_lines`"
    # MB/s per core (code, text): ~67 MB/s for line_counts on 3,000 standard-library .py
    # files (19 MB) on the 2-core reference machine, shared (2026-12-01); charged at 50.
    rate_mb_s = (50.0, 50.0)
    Params = MaxLinesParams
    total_columns = ("lines",)  # stats.json: the lines of the documents it saw

    def added_columns(self) -> list[pa.Field]:
        return [pa.field("lines", pa.int32())]

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        lines = line_counts(docs.column("text"))
        over = pc.greater(lines, self.params.max_lines)
        reasons = pc.if_else(over, pa.scalar("too_many_lines"), pa.scalar(None, pa.string()))
        details = pc.if_else(over, pc.cast(lines, pa.string()), pa.scalar(None, pa.string()))
        return StageResult(docs.append_column("lines", lines), reasons, details)

    @classmethod
    def stats_figures(cls, entry: StatsEntry) -> dict[str, Any]:
        """The mean lines per document the stage saw (the card's figure table)."""
        docs = entry["in"]["docs"]
        lines = (entry.get("totals") or {}).get("lines", 0)
        return {"lines_per_document": round(lines / docs, 1) if docs else 0.0}
