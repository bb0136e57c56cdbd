"""Exact dedup on real duplicates: the standard-library modules that Debian's Python 3.11
(a fixture of tests/fixtures/fetch.py) and the running interpreter share byte for byte,
plus whitespace-only variants of real files."""

from __future__ import annotations

import random
import re
import sysconfig
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lemur_data.pipeline.build import build
from lemur_data.pipeline.manifest import parse_manifest
from tests.fixtures import debian_python_stdlib

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("json", "email", "http", "logging", "concurrent")


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8")
            for package in PACKAGES for p in sorted((root / package).rglob("*.py"))}


def _write(folder: Path, name: str, docs: dict[str, str], rng: random.Random) -> Path:
    paths = sorted(docs)
    table = pa.table({"content": [docs[p] for p in paths], "path": paths,
                      "stars": pa.array([rng.choice([None, 1, 9, 40]) for _ in paths], pa.int64()),
                      "license": [rng.choice([None, "unknown", "MIT"]) for _ in paths]})
    pq.write_table(table, folder / f"{name}.parquet")
    return folder / f"{name}.parquet"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    rng = random.Random(3)
    folder = tmp_path_factory.mktemp("exact-corpus")
    ours = {f"py/{k}": v for k, v in _files(STDLIB).items()}
    for name in rng.sample(sorted(ours), 15):  # whitespace-only edits of real files
        ours[f"ws/{name}"] = re.sub(r"\n", "  \n", ours[name], count=5)
    theirs = {f"debian/{k}": v for root in debian_python_stdlib() for k, v in _files(root).items()}
    return _write(folder, "ours", ours, rng), _write(folder, "debian", theirs, rng), \
        {**ours, **theirs}


def _manifest(ours: Path, debian: Path, **params: object) -> dict:
    columns = {"text": "content", "path": "path", "stars": "stars", "license": "license"}
    return {"name": "exact", "shard": {"max_docs": 60},
            "sources": [{"name": "ours", "kind": "code", "columns": columns,
                         "reader": {"type": "parquet", "paths": [str(ours)]}},
                        {"name": "debian", "kind": "code", "columns": columns,
                         "reader": {"type": "parquet", "paths": [str(debian)]}}],
            "stages": [{"exact_dedup": {"partitions": 3, **params}}]}


def _outcome(run: Path) -> tuple[pa.Table, pa.Table]:
    kept = pa.concat_tables([pq.read_table(p) for p in sorted(run.glob("stages/*exact*/*"))])
    removed = pa.concat_tables([pq.read_table(p) for p in sorted(run.glob("removed/*exact*/*"))],
                               promote_options="default")
    return kept, removed


def _rank(row: dict) -> tuple:
    return (-(row["stars"] or 0), row["license"] in (None, "unknown"), row["id"])


def test_one_copy_of_each_text_survives_by_priority(ray_session, corpus, tmp_path: Path) -> None:
    ours, debian, docs = corpus
    run = tmp_path / "run"
    result = build(parse_manifest(_manifest(ours, debian), base_dir=tmp_path), str(run),
                   progress="none")
    kept, removed = _outcome(run)
    rows = kept.to_pylist() + removed.to_pylist()
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups[row["text"]].append(row)
    assert sum(len(g) > 1 for g in groups.values()) > 15  # real shared files
    assert len({r["text"] for r in kept.to_pylist()}) == kept.num_rows == len(groups)
    kept_ids = set(kept.column("id").to_pylist())
    for group in groups.values():
        best = min(group, key=_rank)
        assert best["id"] in kept_ids
    for row in removed.to_pylist():
        assert row["reason"] == "exact_dedup:duplicate"
        twin = next(r for r in groups[row["text"]] if r["id"] in kept_ids)
        assert row["detail"] == f"duplicate of {twin['id']}"
    stage = next(s for s in result.stats["stages"] if s["name"] == "exact_dedup")
    assert stage["removed"]["docs"] == len(rows) - len(groups)


def test_whitespace_normalization_within_scope(ray_session, corpus, tmp_path: Path) -> None:
    ours, debian, docs = corpus
    run = tmp_path / "run"
    manifest = _manifest(ours, debian, normalize="whitespace", sources=["ours"])
    build(parse_manifest(manifest, base_dir=tmp_path), str(run), progress="none")
    kept, removed = _outcome(run)
    gone = set(removed.column("path").to_pylist())
    # every whitespace variant (or its original) goes; Debian's copies are out of scope
    assert not any(p.startswith("debian/") for p in gone)
    variants = [p for p in docs if p.startswith("ws/")]
    for variant in variants:
        assert (variant in gone) != (variant.removeprefix("ws/") in gone)
    seen = [r for r in kept.to_pylist() + removed.to_pylist() if r["source"] == "ours"]
    distinct = {re.sub(r"[\t\n\f\r ]+", " ", r["text"]).strip() for r in seen}
    assert len(gone) == len(seen) - len(distinct) >= len(variants)


def test_a_run_uses_no_more_hash_partitions_than_shards(tmp_path: Path) -> None:
    """A 2-shard run plans 2 decide tasks, a 12-shard run the manifest's 8."""
    from lemur_data.stages.base import GlobalContext
    from lemur_data.stages.exact_dedup import ExactDedup, ExactDedupParams

    stage = ExactDedup(ExactDedupParams(partitions=8))
    for shards, expected in ((2, 2), (12, 8)):
        ctx = GlobalContext(str(tmp_path), str(tmp_path / "work"),
                            {f"s-{i:05d}": f"{tmp_path}/s-{i}.parquet" for i in range(shards)}, 7)
        hashing, deciding = stage.phases(ctx)
        assert (len(hashing.tasks), len(deciding.tasks)) == (shards, expected)
        assert all(len(task.outputs) == expected for task in hashing.tasks)


def _shards(corpus: tuple[Path, Path, dict[str, str]], folder: Path) -> dict[str, str]:
    """The corpus's two sources as document shards of 60 (as the first step writes them)."""
    shards = {}
    for source in corpus[:2]:
        table = pq.read_table(source)
        name = source.stem
        docs = pa.table({"id": [f"{name}/{p}" for p in table.column("path").to_pylist()],
                         "text": table.column("content").cast(pa.large_string()),
                         "stars": table.column("stars"), "license": table.column("license"),
                         "license_type": pa.nulls(table.num_rows, pa.string()),
                         "source": [name] * table.num_rows, "kind": ["code"] * table.num_rows})
        for start in range(0, docs.num_rows, 60):
            shard = f"{name}-{start // 60:05d}"
            shards[shard] = str(folder / f"shard-{shard}.parquet")
            pq.write_table(docs.slice(start, 60), shards[shard])
    return shards


@pytest.mark.parametrize("keep_order", ["stars", "stack-v2"])
def test_small_partitions_decide_as_polars_does(corpus, tmp_path: Path, monkeypatch,
                                                keep_order: str) -> None:
    """Partitions under SMALL_PARTITION_ROWS are decided without polars: the hash files
    are the ones polars wrote, and the decisions byte-identical on both sides of the
    threshold."""
    import polars as pl

    from lemur_data.stages import exact_dedup as ed

    shards = _shards(corpus, tmp_path)
    work = tmp_path / "work"
    partitions = 3
    for shard, path in shards.items():
        ed.HashShard(path, str(work / "hashes" / shard), "none", partitions,
                     keep_order=keep_order)()
        table = pq.read_table(path)
        frame = pl.DataFrame({  # what the hash phase wrote with polars
            "hash": ed.content_hashes(table.column("text"), "none"),
            "id": table.column("id").to_pylist(),
            "stars": pa.compute.fill_null(table.column("stars"), 0).to_pylist(),
            "license_rank": ed.license_ranks(table.column("license"), keep_order,
                                             table.column("license_type")).to_pylist()},
            schema={"hash": pl.String, "id": pl.String, "stars": pl.Int64,
                    "license_rank": pl.Int8})
        frame = frame.with_columns(ed.hash_partition(pl.col("hash"), partitions).alias("part"))
        for part in range(partitions):
            expected = frame.filter(pl.col("part") == part).drop("part").to_arrow()
            written = pq.read_table(ed.hash_file(str(work), shard, part))
            assert written.equals(expected) and written.schema == expected.schema
    outputs: dict[int, list[bytes]] = {}
    duplicates = 0
    for threshold in (0, ed.SMALL_PARTITION_ROWS):  # polars, then Python
        monkeypatch.setattr(ed, "SMALL_PARTITION_ROWS", threshold)
        outputs[threshold] = []
        for part in range(partitions):
            out = tmp_path / f"decisions-{threshold}" / f"part-{part}.parquet"
            summary = ed.DecidePartition([ed.hash_file(str(work), s, part) for s in shards],
                                         str(out), {s: s for s in shards},
                                         keep_order, part, partitions)()
            duplicates += summary["duplicates"]
            outputs[threshold].append(out.read_bytes())
    assert duplicates > 2 * 15  # both sides found the real shared files
    assert outputs[0] == outputs[ed.SMALL_PARTITION_ROWS]
