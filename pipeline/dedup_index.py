"""`lemur-data index` (and `index: true` on a dedup stage): the dedup index of a finished
run, so later runs can deduplicate against it (`against:` on a dedup stage).

Each dedup stage writes its own section from its own work files (its `export_index`
hook, stages/base.py); this module finds the run's steps, the kept documents and the
duplicates removed in their favour, and writes `index.json` last, so an index is either
complete or rebuilt by the next call; an existing index of the current format makes the
call a no-op. Where a global step's work and input are: `work/<step>/step.json`, which
the runner writes when the step runs (`write_step_record`).
"""

from __future__ import annotations

from typing import Any

from ..stages import storage
from ..stages.base import GlobalContext, GlobalStage, IndexSource
from ..stages.dedup_index.export import kept_ids
from ..stages.dedup_index.format import INDEX_FORMAT, IndexFiles, section_format
from ..stages.registry import STAGE_INFO, stage_hooks

STEP_RECORD = "step.json"


class NotIndexableError(Exception):
    """The folder is not a finished run, or lacks the work files an index is built from."""


def write_step_record(stage: GlobalStage, ctx: GlobalContext) -> None:
    """`<work_dir>/step.json`: the global step's stage, parameters and input shards, paths
    relative to the run folder, so the index finds them without knowing the layout."""
    def relative(path: str) -> str:
        return path.removeprefix(ctx.run_dir.rstrip("/") + "/")

    storage.write_json_atomic(storage.join(ctx.work_dir, STEP_RECORD), {
        "stage": stage.name, "params": stage.params.model_dump(mode="json"),
        "work_dir": relative(ctx.work_dir), "seed": ctx.seed,
        "input_shards": {k: relative(v) for k, v in sorted(ctx.input_shards.items())}})


def _subdirs(folder: str) -> list[str]:
    fs, local = storage.filesystem(folder)
    if not fs.exists(local):
        return []
    return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(local, detail=False)
                  if fs.isdir(p))


def _indexing_steps(run_dir: str) -> list[tuple[GlobalStage, GlobalContext]]:
    """The run's global steps whose stage writes a section of the index."""
    work = storage.join(run_dir, "work")
    records = [storage.join(work, step, STEP_RECORD) for step in _subdirs(work)]
    found: dict[str, tuple[GlobalStage, GlobalContext]] = {}
    for path in (p for p in records if storage.exists(p)):
        record = storage.read_json(path)
        name = record["stage"]
        cls = stage_hooks(name) if name in STAGE_INFO else None
        if cls is None or not issubclass(cls, GlobalStage) or cls.index_section is None:
            continue
        if name in found:
            raise NotIndexableError(f"{run_dir}: more than one {name} step; an index holds one")
        ctx = GlobalContext(run_dir, storage.join(run_dir, record["work_dir"]),
                            {k: storage.join(run_dir, v)
                             for k, v in record["input_shards"].items()}, record["seed"])
        found[name] = (cls(cls.Params.model_validate(record["params"])), ctx)
    return list(found.values())


def build_index(run_dir: str) -> dict[str, Any]:
    """Write `<run_dir>/index/` for a finished run; return its index.json."""
    files = IndexFiles(run_dir)
    if storage.exists(files.manifest()):
        existing = storage.read_json(files.manifest())
        if existing.get("format") == INDEX_FORMAT and all(
                section_format(existing.get(stage.index_section) or {}) == stage.index_format
                for stage, _ in _indexing_steps(run_dir)):  # every section current
            return existing
    stats_path = storage.join(run_dir, "stats.json")
    if not storage.exists(stats_path):
        raise NotIndexableError(f"{run_dir} holds no stats.json: not a finished run")
    stats = storage.read_json(stats_path)
    steps = _indexing_steps(run_dir)
    if not steps:
        raise NotIndexableError(f"{run_dir}: no step of the run writes a dedup index (no "
                                f"dedup stage, or its work/*/{STEP_RECORD} was deleted)")
    output_dir = storage.join(run_dir, stats["output"]["dir"])
    kept = kept_ids([storage.join(output_dir, name) for name in stats["output"]["shards"]])
    removed: dict[str, str] = {}
    for stage, ctx in steps:
        removed.update(stage.index_removed(ctx))
    index: dict[str, Any] = {"format": INDEX_FORMAT, "manifest": stats["manifest"],
                             "fingerprint": stats["fingerprint"], "kept_docs": len(kept)}
    for stage, ctx in steps:
        assert stage.index_section is not None
        index[stage.index_section] = {"format": stage.index_format,
                                      **stage.export_index(IndexSource(ctx, kept, removed))}
    storage.write_json_atomic(files.manifest(), index)
    return index
