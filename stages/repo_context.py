"""Repository-level documents: the kept files of one repository joined into one
document (StarCoder2's and DeepSeek-Coder's repository context). A global stage;
list it after dedup.

    - repo_context: {order: dependencies, format: starcoder2, max_bytes: 1MB,
                     metadata_probability: 0.5, kinds: [code]}

Phases:
1. `group` (per shard): the in-scope documents with a `repo`, partitioned by
   hash(source, repo) into `partitions` files.
2. `build` (per partition): each repository's files in order (filters/repo_deps.py),
   cut at file boundaries into runs of <= `max_bytes`, each run formatted
   (filters/repo_format.py). A run's first file "hosts" it: the run's document
   takes the host's place in the host's shard, under a new id.
3. applier (per shard): a host row becomes its repository document (new id, text,
   lang = the run's language with most bytes, path = the repo, `repo_files` = the
   ids of the run's files in order, `repo_part` = the run's number in its repo);
   every other file of the run is removed as `repo_context:merged` with the
   repository document's id as detail.

So stats count a repository document as one kept document, and each file merged
into one (besides its host) as removed `merged`: in = kept + removed holds, and
`repo_files` says exactly which files each document holds. Documents without a
repo, or outside `sources`/`kinds`, pass untouched (`repo_files` null).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
import xxhash
from pydantic import ByteSize, Field, PositiveInt

from ..filters import repo_format
from ..filters.repo_deps import RepoIndex, dependencies, dependency_order
from . import storage
from .base import (
    DecisionsApplier,
    GlobalContext,
    GlobalStage,
    Phase,
    ShardContext,
    StageParams,
    StageResult,
    Task,
    in_scope,
)
from .hooks import StatsEntry

DOCS_SCHEMA = pa.schema([("shard", pa.string()), ("host_id", pa.string()), ("id", pa.string()),
                         ("text", pa.large_string()), ("lang", pa.string()),
                         ("repo_files", pa.list_(pa.string())), ("repo_part", pa.int32())])
# Work files are written once and read once: lz4 is ~5x faster to write than zstd here.
WORK_COMPRESSION = "lz4"
MERGED_SCHEMA = pa.schema([("shard", pa.string()), ("id", pa.string()),
                           ("merged_into", pa.string())])


class RepoContextParams(StageParams):
    order: Literal["dependencies", "random", "path"] = "dependencies"
    """`dependencies`: DeepSeek-Coder's (a file after the files it imports, cycles
    tolerated); `random`: shuffled, seeded by the manifest's seed and the repo; `path`."""
    format: Literal["starcoder2", "path_comments"] = "starcoder2"
    """`starcoder2`: `<repo_name>NAME<file_sep>PATH\\nCODE...`; `path_comments`: each file
    preceded by its path as a comment of its language (DeepSeek-Coder)."""
    max_bytes: ByteSize = ByteSize(1_000_000)
    """A larger repository is cut at file boundaries into several documents."""
    metadata_probability: float = Field(0.5, ge=0.0, le=1.0)
    """starcoder2: share of documents with the repo name and paths (StarCoder2: 0.5);
    the others are `<file_sep>CODE...` only. Seeded per document."""
    partitions: PositiveInt = 8
    """Repository partitions: memory per build task ~ 3x the corpus text / partitions."""


def _hash64(*parts: object) -> int:
    return xxhash.xxh3_64_intdigest("\x00".join(map(str, parts)).encode())


@dataclass(frozen=True)
class GroupShard:
    shard_id: str
    shard_path: str
    out_paths: tuple[str, ...]
    scope: StageParams

    def __call__(self) -> dict[str, Any]:
        table = storage.read_parquet(self.shard_path,
                                     ["id", "text", "source", "kind", "lang", "path", "repo"])
        mask = pc.and_(in_scope(table, self.scope),
                       pc.fill_null(pc.greater(pc.utf8_length(table.column("repo")), 0), False))
        table = table.filter(mask)
        import polars as pl  # here: ~0.4 s, and the workbench imports this module for its hooks

        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        parts = len(self.out_paths)
        # xxhash, not polars' hash: the partition of a repo must not depend on a library version
        buckets = [_hash64(s, r) % parts for s, r in zip(table.column("source").to_pylist(),
                                                         table.column("repo").to_pylist(),
                                                         strict=True)]
        frame = frame.with_columns(pl.lit(self.shard_id).alias("shard"),
                                   pl.Series("bucket", buckets, dtype=pl.Int64))
        for part, path in enumerate(self.out_paths):
            rows = frame.filter(pl.col("bucket") % parts == part).drop("bucket")
            storage.write_parquet_atomic(path, rows.to_arrow(), compression=WORK_COMPRESSION)
        return {"docs": table.num_rows}


@dataclass(frozen=True)
class BuildPartition:
    inputs: tuple[str, ...]
    docs_out: str
    merged_out: str
    params: RepoContextParams
    seed: int

    def __call__(self) -> dict[str, Any]:
        import polars as pl

        frames = [pl.read_parquet(p) for p in self.inputs]
        frames = [f for f in frames if f.height]
        docs: list[dict[str, Any]] = []
        merged: list[dict[str, Any]] = []
        repos = 0
        if frames:
            frame = pl.concat(frames).sort(["source", "repo", "path", "id"])
            # Plain lists once, then each repository as a slice: cheaper than polars'
            # per-group frames for the many small repositories of a partition.
            columns = {c: frame[c].to_list() for c in ("id", "text", "lang", "path", "repo",
                                                          "source", "shard")}
            keys = list(zip(columns["source"], columns["repo"], strict=True))
            start = 0
            for end in range(1, len(keys) + 1):
                if end == len(keys) or keys[end] != keys[start]:
                    rows = [{c: columns[c][i] for c in columns} for i in range(start, end)]
                    self._repo(keys[start][0], keys[start][1], rows, docs, merged)
                    repos += 1
                    start = end
        docs.sort(key=lambda r: (r["shard"], r["host_id"]))
        merged.sort(key=lambda r: (r["shard"], r["id"]))
        storage.write_parquet_groups_atomic(self.docs_out, _by_shard(docs, DOCS_SCHEMA),
                                            DOCS_SCHEMA, compression=WORK_COMPRESSION)
        storage.write_parquet_groups_atomic(self.merged_out, _by_shard(merged, MERGED_SCHEMA),
                                            MERGED_SCHEMA, compression=WORK_COMPRESSION)
        return {"repos": repos, "documents": len(docs), "merged": len(merged)}

    def _repo(self, source: str, repo: str, rows: list[dict[str, Any]],
              docs: list[dict[str, Any]], merged: list[dict[str, Any]]) -> None:
        p = self.params
        by_path = {r["path"] or r["id"]: r for r in rows}
        paths = list(by_path)
        if p.order == "path":
            ordered = paths
        elif p.order == "random":
            ordered = sorted(paths)
            random.Random(_hash64(self.seed, source, repo)).shuffle(ordered)
        else:
            index = RepoIndex(paths)
            deps = {path: dependencies(path, by_path[path]["text"], by_path[path]["lang"], index)
                    for path in paths}
            ordered = dependency_order(paths, deps)
        files = [by_path[path] for path in ordered]
        sizes = [len(f["text"].encode()) for f in files]
        for k, run in enumerate(repo_format.chunks_by_bytes(sizes, int(p.max_bytes))):
            members = [files[i] for i in run]
            doc_id = storage.document_id(source, f"repo:{repo}#{k}")
            parts = [repo_format.RepoFile(f["path"] or "", f["text"], f["lang"]) for f in members]
            if p.format == "starcoder2":
                metadata = random.Random(_hash64(self.seed, doc_id)).random() \
                    < p.metadata_probability
                text = repo_format.starcoder2(repo, parts, metadata)
            else:
                text = repo_format.path_comments(parts)
            weight: Counter[str] = Counter()
            for i in run:
                weight[files[i]["lang"] or ""] += sizes[i]
            lang = min(weight, key=lambda name: (-weight[name], name)) or None
            host = members[0]
            docs.append({"shard": host["shard"], "host_id": host["id"], "id": doc_id,
                         "text": text, "lang": lang, "repo_files": [f["id"] for f in members],
                         "repo_part": k})
            merged += [{"shard": f["shard"], "id": f["id"], "merged_into": doc_id}
                       for f in members[1:]]


def _by_shard(rows: list[dict[str, Any]], schema: pa.Schema) -> list[pa.Table]:
    """Rows (sorted by shard) as one table per shard: one parquet row group each, so the
    applier of a shard reads its own rows only."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["shard"], []).append(row)
    return [pa.Table.from_pylist(group, schema) for group in groups.values()]


class RepoContextApplier(DecisionsApplier[RepoContextParams]):
    name = "repo_context"
    Params = RepoContextParams

    def added_columns(self) -> list[pa.Field]:
        return [pa.field("repo_files", pa.list_(pa.string())), pa.field("repo_part", pa.int32())]

    def _read(self, kind: str, shard: str, columns: list[str]) -> pa.Table:
        return storage.read_shard_rows(
            storage.list_files(storage.join(self.decisions_dir, kind), ".parquet"), shard, columns)

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        hosts = self._read("docs", ctx.shard_id,
                           ["host_id", "id", "text", "lang", "repo_files", "repo_part"])
        merged = self._read("merged", ctx.shard_id, ["id", "merged_into"])
        host_of = {h: i for i, h in enumerate(hosts.column("host_id").to_pylist())}
        into = dict(zip(merged.column("id").to_pylist(), merged.column("merged_into").to_pylist(),
                        strict=True))
        ids = docs.column("id").to_pylist()
        n = docs.num_rows
        # Row i of the output takes column values from docs row i, or from hosts row h
        # (index n + h of docs ++ hosts): arrow `take`, no text through Python.
        source_row = list(range(n))
        host_row: list[int | None] = [None] * n
        reasons: list[str | None] = [None] * n
        details: list[str | None] = [None] * n
        for row, doc_id in enumerate(ids):
            if doc_id in host_of:
                source_row[row] = n + host_of[doc_id]
                host_row[row] = host_of[doc_id]
            elif doc_id in into:
                reasons[row], details[row] = "merged", f"in {into[doc_id]}"
        take = pa.array(source_row, pa.int64())
        table = docs
        for name in ("id", "text", "lang"):
            field = table.schema.field(name)
            both = pa.concat_arrays([table.column(name).combine_chunks().cast(field.type),
                                     hosts.column(name).combine_chunks().cast(field.type)])
            table = table.set_column(table.schema.get_field_index(name), field, both.take(take))
        is_host = pa.array([h is not None for h in host_row], pa.bool_())
        path = pc.if_else(is_host, docs.column("repo"), docs.column("path"))  # host: the repo
        table = table.set_column(table.schema.get_field_index("path"),
                                 table.schema.field("path"), path)
        nulls = pa.nulls(n, pa.int64())
        at_host = pa.array(host_row, pa.int64()) if n else nulls
        for name, column in (("repo_files", hosts.column("repo_files").take(at_host)),
                             ("repo_part", hosts.column("repo_part").take(at_host))):
            if name in table.column_names:
                table = table.set_column(table.schema.get_field_index(name), name, column)
            else:
                table = table.append_column(name, column)
        return StageResult(table, pa.array(reasons, pa.string()), pa.array(details, pa.string()))


class RepoContext(GlobalStage[RepoContextParams]):
    @classmethod
    def explain(cls, doc: dict[str, Any], entry: dict[str, Any], work: Any) -> list[str]:
        """The repository document a file joined (as its host or merged into it), or the
        files a repository document holds."""
        doc_id = doc["id"]
        if doc.get("repo_files"):
            files = doc["repo_files"]
            return [f"repository document {doc.get('path')} (part {doc.get('repo_part')}) of "
                    f"{len(files)} files, first {files[0]}"]
        merged = work.rows("decisions/merged", "id", [doc_id])
        if merged:
            return [f"joined repository document {merged[0]['merged_into']} "
                    f"(repo {doc.get('repo')})"]
        hosted = work.rows("decisions/docs", "host_id", [doc_id])
        if hosted:
            row = hosted[0]
            return [f"hosts repository document {row['id']} (repo {doc.get('repo')}, part "
                    f"{row['repo_part']}, {len(row['repo_files'])} files): it takes this "
                    "file's place under the new id"]
        return ["not in a repository document (no repo, or out of scope)"]

    name = "repo_context"
    about = (
        "joins each repository's kept files into repository "
        "documents (dependency order, StarCoder2 format)")
    rate_mb_s = (20.0, 20.0)  # MB/s per core (code, text); docs/benchmarks.md
    merge_reasons = ("repo_context:merged",)

    @classmethod
    def merged_into(cls, entry: StatsEntry) -> int | None:
        documents = entry.get("repository_documents")  # from `summary`
        return int(documents) if isinstance(documents, int) else None

    def summary(self, ctx: GlobalContext) -> dict[str, Any]:
        """How many repository documents the build phase made (the report and card say
        "N files into M documents"); their rows are in decisions/docs."""
        files = storage.list_files(storage.join(ctx.work_dir, "decisions", "docs"), ".parquet")
        return {"repository_documents": sum(storage.parquet_rows(f) for f in files)}

    @classmethod
    def card_limitations(cls, entry: StatsEntry | None) -> list[str]:
        return [] if entry is None else [
            "repo_context joined each repository's files into repository documents: "
            "such a document counts once as kept, and each file it absorbed besides "
            "its first is listed as removed `repo_context:merged` (its `repo_files` "
            "column names every file it holds)."]
    Params = RepoContextParams

    def phases(self, ctx: GlobalContext) -> list[Phase]:
        p = self.params
        groups = storage.join(ctx.work_dir, "groups")
        names = [f"part-{q:04d}.parquet" for q in range(p.partitions)]
        grouping = Phase("group", [
            Task(shard, GroupShard(shard, path, tuple(storage.join(groups, shard, n)
                                                      for n in names), p),
                 tuple(storage.join(groups, shard, n) for n in names))
            for shard, path in ctx.input_shards.items()])
        decisions = storage.join(ctx.work_dir, "decisions")
        building = Phase("build", [
            Task(name[:-len(".parquet")], BuildPartition(
                tuple(storage.join(groups, shard, name) for shard in sorted(ctx.input_shards)),
                storage.join(decisions, "docs", name), storage.join(decisions, "merged", name),
                p, ctx.seed),
                 (storage.join(decisions, "docs", name), storage.join(decisions, "merged", name)))
            for name in names])
        return [grouping, building]

    def applier(self, ctx: GlobalContext) -> DecisionsApplier:
        return RepoContextApplier(self.params, storage.join(ctx.work_dir, "decisions"))
