"""Throughput of `repo_context` on the demo's site-packages source, one process.

Run by hand (not collected by pytest):
    python -m tests.bench.bench_repo_context [--order dependencies]
Reads the demo's site-packages files (each top-level package a repository) with the
tree reader into shards of 2000 documents, then times the stage's three steps (group
per shard, build per partition, the applier per shard) in this one process: MB/s per
core = input text MB / the summed CPU seconds (process_time: the machine is shared)
of the three.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy
import yaml

from lemur_data.stages import storage
from lemur_data.stages.base import ShardContext
from lemur_data.stages.readers.common import SourceInfo
from lemur_data.stages.readers.files import TreeParams, TreeReader
from lemur_data.stages.repo_context import (
    BuildPartition,
    GroupShard,
    RepoContextApplier,
    RepoContextParams,
)

DEMO = Path(__file__).resolve().parents[2] / "manifests" / "demo.yaml"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--order", default="dependencies")
    parser.add_argument("--partitions", type=int, default=2)
    args = parser.parse_args()
    source = next(s for s in yaml.safe_load(DEMO.read_text())["sources"]
                  if s["name"] == "site-packages")
    reader_params = {**source["reader"], "root": str(Path(numpy.__file__).resolve().parents[1])}
    reader = TreeReader(TreeParams(**reader_params), SourceInfo("site-packages", "code"))
    params = RepoContextParams(order=args.order, partitions=args.partitions)
    with tempfile.TemporaryDirectory() as tmp:
        shards = {}
        for unit in reader.plan(max_docs=2000, max_bytes=8 << 20):
            table = reader.read(unit).drop_columns(["reason", "detail"])
            shards[f"s{unit.index:05d}"] = path = f"{tmp}/in/s{unit.index:05d}.parquet"
            storage.write_parquet_atomic(path, table)
        megabytes = sum(storage.doc_bytes(storage.read_parquet(p)) for p in shards.values()) / 1e6
        names = [f"part-{q:04d}.parquet" for q in range(params.partitions)]
        seconds = {}
        started = time.process_time()
        for shard, path in shards.items():
            GroupShard(shard, path, tuple(f"{tmp}/g/{shard}/{n}" for n in names), params)()
        seconds["group"] = time.process_time() - started
        started = time.process_time()
        for name in names:
            BuildPartition(tuple(f"{tmp}/g/{s}/{name}" for s in shards),
                           f"{tmp}/d/docs/{name}", f"{tmp}/d/merged/{name}", params, 1234)()
        seconds["build"] = time.process_time() - started
        applier = RepoContextApplier(params, f"{tmp}/d")
        started = time.process_time()
        kept = 0
        for shard, path in shards.items():
            result = applier.apply(storage.read_parquet(path), ShardContext(shard, tmp, 1234))
            kept += result.reasons.null_count
        seconds["apply"] = time.process_time() - started
    total = sum(seconds.values())
    print(f"{len(shards)} shards, {megabytes:.1f} MB; order {args.order}; {kept} rows kept")
    print("  " + ", ".join(f"{k} {v:.2f} s" for k, v in seconds.items()))
    print(f"  {megabytes / total:.1f} MB/s on one core")


if __name__ == "__main__":
    main()
