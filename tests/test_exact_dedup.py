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
