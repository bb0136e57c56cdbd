"""What a stage tells the workbench (`lemur-data inspect` / `explain`) about one of its
decisions: the types of the `explain` and `locate` hooks of the stage contract
(`StageHooks`, stages/hooks.py, where their defaults say nothing).

- `explain(doc, entry, work) -> list[str]`: a few lines on what the stage decided about
  one document and why: its scores against the thresholds of `entry["params"]` (as
  stats.json has them; `entry["given"]`: as the manifest wrote them, where an explicit
  null turns a rule off), the cluster it fell in, the document it joined. `doc` is the
  document as the stage left it (every column; `reason` and `detail` when the stage
  removed it).
- `locate(doc, entry) -> list[Span]`: where in `doc["text"]` the rule found what it
  acted on (a syntax error, a benchmark match, a redaction), for `inspect` to mark.

Both are classmethods and read only the run folder (stats entry, document, the
stage's work files), so a finished run is explained without rerunning anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from . import storage


@dataclass(frozen=True)
class Span:
    """Characters [start, end) of a document's text, and what the rule saw there."""

    start: int
    end: int
    label: str


@dataclass(frozen=True)
class WorkFiles:
    """A global stage's work folder of a finished run (`work/NN-<stage>/`), read by id."""

    folder: str | None

    def rows(self, name: str, column: str, values: list[str]) -> list[dict[str, Any]]:
        """Rows of the parquet files under `<folder>/<name>/` whose `column` is in
        `values` (decisions of a dedup stage, a repository's members, ...)."""
        if not self.folder:
            return []
        found: list[dict[str, Any]] = []
        for path in storage.list_files(storage.join(self.folder, name), ".parquet"):
            columns = storage.parquet_columns(path)
            if column not in columns:
                continue
            wanted = [c for c in columns if c != "text"]
            table = _read(path, wanted)
            found += table.filter(pc.is_in(table.column(column), pa.array(values))).to_pylist()
        return found


def _read(path: str, columns: list[str]) -> pa.Table:
    """ParquetFile, not read_table (which imports pyarrow.dataset and pandas)."""
    import pyarrow.parquet as pq

    fs, bare = storage.filesystem(path)
    with fs.open(bare, "rb") as handle:
        return pq.ParquetFile(handle).read(columns=columns)


def number(value: Any) -> str:
    """A metric as explain prints it (floats to 4 significant digits)."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
