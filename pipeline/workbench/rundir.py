"""A finished run folder, read back: its steps, kept and removed documents, and each
document's fate (kept at the end, or the stage and reason that removed it).

Everything comes from what the build wrote (stats.json, manifest.json, `stages/`,
`removed/`, `work/`), never from the stages' code, so the workbench reads any run.
Columns are read only where needed: the fates need ids, reasons and the document
columns, the text is read for the few documents a command shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...stages import storage

FATE_COLUMNS = ("id", "source", "kind", "lang", "path", "reason", "detail")
"""What a document's fate row holds (besides `step`, `outcome` and `tokens`)."""
KEPT = "kept"
REPLACED = "replaced"
"""Read, never removed and not in the output: a stage replaced it by a new document (a
repository document holds it) and counted it as kept until then."""

_STEP = re.compile(r"^(\d+)-(.+)$")


class NotARunError(Exception):
    """The folder holds no finished run (no stats.json)."""


@dataclass(frozen=True)
class StepFolder:
    """One fused document step: `stages/<label>/` (kept) and `removed/<label>/`."""

    label: str
    stages: tuple[str, ...]
    kept_dir: str
    removed_dir: str


class RunFolder:
    """A finished run, read lazily."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir.rstrip("/")
        if not storage.exists(self.path("stats.json")):
            raise NotARunError(f"{run_dir} holds no stats.json: not a finished run (give the "
                               "--run-dir of a finished build)")

    def path(self, *parts: str) -> str:
        return storage.join(self.run_dir, *parts)

    @cached_property
    def stats(self) -> dict[str, Any]:
        return storage.read_json(self.path("stats.json"))

    @cached_property
    def manifest(self) -> dict[str, Any]:
        return storage.read_json(self.path("manifest.json"))

    @property
    def seed(self) -> int:
        return int(self.manifest["manifest"].get("seed", 0))

    @cached_property
    def steps(self) -> list[StepFolder]:
        """The document steps in run order; with `read: needed`, the first step and then
        those of the round that made the output."""
        final = (self.stats.get("read") or {}).get("final_round")
        first = self._steps("")[:1]
        later = self._steps(f"rounds/{final}") if final is not None else self._steps("")[1:]
        return first + later

    def _steps(self, scope: str) -> list[StepFolder]:
        base = self.path(scope) if scope else self.run_dir
        folder = storage.join(base, "stages")
        fs, bare = storage.filesystem(folder)
        if not fs.exists(bare):
            return []
        names = (p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(bare, detail=False))
        found = [(label, m) for label in names if (m := _STEP.match(label))]
        found.sort(key=lambda item: int(item[1].group(1)))  # by step number, stable
        return [StepFolder(label, tuple(m.group(2).split("+")),
                           storage.join(base, "stages", label),
                           storage.join(base, "removed", label))
                for label, m in found]

    def stage_step(self, stage: str) -> StepFolder | None:
        """The step whose documents a stage decided on (a global stage: its applier's)."""
        return next((s for s in self.steps if stage in s.stages), None)

    @staticmethod
    def _read(folder: str, columns: list[str], filter_ids: list[str] | None = None) -> pa.Table:
        """The columns (those the shards have) of every shard of a folder, in shard order."""
        tables = []
        for path in storage.list_files(folder, ".parquet"):
            have = set(storage.parquet_columns(path))
            table = read_file(path, [c for c in columns if c in have])
            if filter_ids is not None:
                table = table.filter(pc.is_in(table.column("id"), pa.array(filter_ids)))
            for c in columns:
                if c not in table.column_names:
                    table = table.append_column(c, pa.nulls(table.num_rows, pa.string()))
            shard = path.rsplit("/", 1)[-1].removesuffix(".parquet")
            tables.append(table.select(columns).append_column(
                "shard", pa.array([shard] * table.num_rows, pa.string())))
        if not tables:
            return pa.table({c: pa.array([], pa.string()) for c in [*columns, "shard"]})
        return pa.concat_tables(tables, promote_options="permissive")

    def kept(self, columns: list[str], ids: list[str] | None = None) -> pa.Table:
        """The output documents (the last document step's kept shards)."""
        return self._read(self.steps[-1].kept_dir, columns, ids)

    def removed(self, step: StepFolder, columns: list[str],
                ids: list[str] | None = None) -> pa.Table:
        return self._read(step.removed_dir, columns, ids)

    def step_kept(self, step: StepFolder, columns: list[str],
                  ids: list[str] | None = None) -> pa.Table:
        return self._read(step.kept_dir, columns, ids)

    @cached_property
    def fates(self) -> pa.Table:
        """One row per document the run saw: the fate columns, `step` (where it left the
        run, or the last step), `outcome` (kept, removed, replaced) and `tokens`."""
        cols: list[str] = list(FATE_COLUMNS)
        parts = []
        seen: set[str] = set()
        for step in self.steps:
            gone = self.removed(step, cols)
            parts.append(_with(gone, step.label, "removed"))
            seen.update(gone.column("id").to_pylist())
        last = self.steps[-1]
        kept = self.kept([*cols, "tokens"])
        kept_ids = set(kept.column("id").to_pylist())
        seen |= kept_ids
        parts.append(_with(kept.drop_columns(["tokens"]), last.label, KEPT, kept.column("tokens")))
        # documents the first step kept that later stages neither removed nor kept
        first = self.step_kept(self.steps[0], cols)
        replaced = first.filter(pc.invert(pc.is_in(first.column("id"), pa.array(sorted(seen)))))
        if replaced.num_rows:
            parts.append(_with(replaced, last.label, REPLACED))
        tables = [p if "tokens" in p.column_names else
                  p.append_column("tokens", pa.nulls(p.num_rows, pa.int64())) for p in parts]
        return pa.concat_tables([t.cast(tables[-1].schema) if t.schema != tables[-1].schema
                                 else t for t in tables])

    def fate_of(self, doc_id: str) -> dict[str, Any] | None:
        found = self.fates.filter(pc.equal(self.fates.column("id"), doc_id))
        return found.to_pylist()[0] if found.num_rows else None

    def find(self, key: str) -> list[dict[str, Any]]:
        """The fates of a document given by id, or by path (as the source lists it; a path
        may name one document in several sources)."""
        fates = self.fates
        by_id = fates.filter(pc.equal(fates.column("id"), key))
        if by_id.num_rows:
            return by_id.to_pylist()
        return fates.filter(pc.equal(fates.column("path"), key)).to_pylist()

    def texts(self, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Full rows (text and every column but token ids) of these fate rows, by id,
        read from the shard each left the run in."""
        out: dict[str, dict[str, Any]] = {}
        by_file: dict[str, list[str]] = {}
        for row in rows:
            step = next(s for s in self.steps if s.label == row["step"])
            folder = {"removed": step.removed_dir, KEPT: step.kept_dir}.get(
                row["outcome"], self.steps[0].kept_dir)
            by_file.setdefault(storage.join(folder, row["shard"] + ".parquet"),
                               []).append(row["id"])
        for path, ids in sorted(by_file.items()):
            out.update(self.rows_in(path, ids))
        return out

    @staticmethod
    def rows_in(path: str, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Rows of one shard file by id (every column but token ids)."""
        if not storage.exists(path):
            return {}
        columns = [c for c in storage.parquet_columns(path) if c != "token_ids"]
        table = read_file(path, columns)
        table = table.filter(pc.is_in(table.column("id"), pa.array(ids)))
        return {row["id"]: row for row in table.to_pylist()}


def read_file(path: str, columns: list[str]) -> pa.Table:
    """Columns of one parquet file. pyarrow.parquet.ParquetFile, not read_table: that
    goes through pyarrow.dataset, whose import (pandas) costs a command ~0.5 s."""
    import pyarrow.parquet as pq

    fs, bare = storage.filesystem(path)
    with fs.open(bare, "rb") as handle:
        return pq.ParquetFile(handle).read(columns=columns)


def _with(table: pa.Table, step: str, outcome: str,
          tokens: pa.ChunkedArray | None = None) -> pa.Table:
    table = table.append_column("step", pa.array([step] * table.num_rows, pa.string()))
    table = table.append_column("outcome", pa.array([outcome] * table.num_rows, pa.string()))
    if tokens is not None:
        table = table.append_column("tokens", tokens.cast(pa.int64()))
    return table


def stage_of(reason: str | None) -> str | None:
    """`quality` of `quality:max_line_length`."""
    return reason.split(":", 1)[0] if reason else None
