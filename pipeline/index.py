"""`lemur-data index` (and `index: true` on a dedup stage): the dedup index of a finished
run, so later runs can deduplicate against it (`against:` on exact_dedup / minhash).

The run's own files say everything needed: stats.json (the dedup parameters, the
output shards), `work/NN-exact_dedup/` and `work/NN-minhash/` (hashes, bands, keys and
shingle sets). Index files are written atomically and `index.json` last, so an index
is either complete or rebuilt by the next call; an existing index of the current
format makes the call a no-op. The index layout: stages/incremental/index.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..stages import storage
from ..stages.incremental import build as index_build
from ..stages.incremental.index import INDEX_FORMAT, IndexFiles
from ..stages.minhash.files import WorkFiles


class NotIndexableError(Exception):
    """The folder is not a finished run, or lacks the work files an index is built from."""


def _subdirs(folder: str) -> list[str]:
    fs, local = storage.filesystem(folder)
    if not fs.exists(local):
        return []
    return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(local, detail=False)
                  if fs.isdir(p))


def _stage(stats: dict[str, Any], name: str, run_dir: str) -> dict[str, Any] | None:
    found = [s for s in stats.get("stages") or [] if s["name"] == name]
    if len(found) > 1:
        raise NotIndexableError(f"{run_dir}: {len(found)} {name} stages; an index holds one")
    return found[0] if found else None


def _work_dir(run_dir: str, name: str) -> tuple[str, int]:
    labels = [d for d in _subdirs(storage.join(run_dir, "work")) if d.endswith(f"-{name}")]
    if len(labels) != 1:
        raise NotIndexableError(f"{run_dir}: expected one work/NN-{name} folder, found "
                                f"{labels or 'none'} (were the work files deleted?)")
    return storage.join(run_dir, "work", labels[0]), int(labels[0].split("-", 1)[0])


def build_index(run_dir: str) -> dict[str, Any]:
    """Write `<run_dir>/index/` for a finished run; return its index.json."""
    files = IndexFiles(run_dir)
    if storage.exists(files.manifest()):
        existing = storage.read_json(files.manifest())
        if existing.get("format") == INDEX_FORMAT:
            return existing
    stats_path = storage.join(run_dir, "stats.json")
    if not storage.exists(stats_path):
        raise NotIndexableError(f"{run_dir} holds no stats.json: not a finished run")
    stats = storage.read_json(stats_path)
    exact, minhash = _stage(stats, "exact_dedup", run_dir), _stage(stats, "minhash", run_dir)
    if exact is None and minhash is None:
        raise NotIndexableError(f"{run_dir}: the run has no exact_dedup or minhash stage")
    output_dir = storage.join(run_dir, stats["output"]["dir"])
    kept = index_build.kept_ids([storage.join(output_dir, name)
                                 for name in stats["output"]["shards"]])
    decision_dirs = [storage.join(_work_dir(run_dir, name)[0], "decisions")
                     for name, stage in (("exact_dedup", exact), ("minhash", minhash)) if stage]
    removed = index_build.removed_for(decision_dirs)
    index: dict[str, Any] = {"format": INDEX_FORMAT, "manifest": stats["manifest"],
                             "fingerprint": stats["fingerprint"], "kept_docs": len(kept),
                             "exact": None, "minhash": None}
    if exact is not None:
        index["exact"] = _exact(files, run_dir, exact, kept, removed)
    if minhash is not None:
        index["minhash"] = _minhash(files, run_dir, minhash, kept, removed)
    storage.write_json_atomic(files.manifest(), index)
    return index


def _exact(files: IndexFiles, run_dir: str, stage: dict[str, Any], kept: Any,
           removed: dict[str, str]) -> dict[str, Any]:
    work_dir, _ = _work_dir(run_dir, "exact_dedup")
    params = stage["params"]
    shards = _subdirs(storage.join(work_dir, "hashes"))
    docs = sum(index_build.exact_partition(files, work_dir, shards, part, kept, removed)
               for part in range(params["partitions"]))
    return {"normalize": params["normalize"], "partitions": params["partitions"], "docs": docs}


def _minhash(files: IndexFiles, run_dir: str, stage: dict[str, Any], kept: Any,
             removed: dict[str, str]) -> dict[str, Any]:
    work_dir, number = _work_dir(run_dir, "minhash")
    work = WorkFiles(work_dir)
    lsh = stage["lsh"]
    partitions = lsh["partitions"]
    shards = sorted(p.rsplit("/", 1)[-1].removesuffix(".parquet")
                    for p in storage.list_files(storage.join(work_dir, "meta"), ".parquet"))
    docs = index_build.kept_docs(work, shards, kept, removed)
    keys = docs.column("key")
    index_build.minhash_docs(files, docs, partitions)
    band_rows = sum(index_build.minhash_bands(files, work, shards, part, keys.combine_chunks())
                    for part in range(partitions))
    if lsh["verify"]:
        for part in range(partitions):
            index_build.minhash_shingles(files, work, shards, part, keys.combine_chunks())
    else:
        step = [d for d in _subdirs(storage.join(run_dir, "stages"))
                if d.startswith(f"{number - 1:02d}-")]
        if len(step) != 1:
            raise NotIndexableError(f"{run_dir}: the minhash step's input (stages/"
                                    f"{number - 1:02d}-*) is missing")
        inputs = [storage.join(run_dir, "stages", step[0], f"shard-{shard}.parquet")
                  for shard in shards]
        text = index_build.TextSets(inputs, lsh["ngram"], lsh["tokenizer"])
        index_build.minhash_shingles_from_text(files, text, keys.to_numpy().astype(np.uint64),
                                               partitions)
    return {**{k: lsh[k] for k in ("seed", "permutations", "bands", "rows", "ngram",
                                   "tokenizer", "scheme", "backend", "partitions")},
            "docs": docs.num_rows, "band_rows": band_rows}
