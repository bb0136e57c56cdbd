"""End-to-end builds on real files through the real Ray runner."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lemur_data.pipeline.build import RunDirError
from lemur_data.pipeline.executor import RunError
from tests.realdata import STDLIB, stack_parquet, stdlib_files
from tests.runs import count_rows, digest, removed_reasons, run_build


def code_manifest(root: Path, max_docs: int = 25) -> dict:
    return {"name": "t", "seed": 3, "shard": {"max_docs": max_docs},
            "sources": [{"name": "tree", "kind": "code",
                         "reader": {"type": "tree", "root": str(root), "repo_depth": 1}}],
            "stages": [{"exact_dedup": {"partitions": 3}}]}


@pytest.fixture
def tree_with_duplicates(stdlib_tree: Path) -> Path:
    # Real duplicates: the same package vendored twice, as real repos do.
    shutil.copytree(stdlib_tree / "json", stdlib_tree / "vendored" / "json")
    return stdlib_tree


def test_build_counts_add_up_and_duplicates_go(ray_session, tree_with_duplicates: Path,
                                               tmp_path: Path) -> None:
    run = tmp_path / "run"
    result = run_build(code_manifest(tree_with_duplicates), tmp_path, run)
    stats = json.loads((run / "stats.json").read_text())
    files = [p for p in tree_with_duplicates.rglob("*") if p.is_file()]
    assert stats["input"]["docs"] == len(files)
    for stage in stats["stages"]:
        assert stage["in"]["docs"] == stage["kept"]["docs"] + stage["removed"]["docs"]
        assert stage["in"]["bytes"] == stage["kept"]["bytes"] + stage["removed"]["bytes"]
    ingest, dedup = stats["stages"]
    assert dedup["in"]["docs"] == ingest["kept"]["docs"]
    vendored = len(list((tree_with_duplicates / "vendored").rglob("*.py")))
    # every vendored copy is a duplicate (empty files were already removed at ingest)
    empties = sum(1 for p in (tree_with_duplicates / "json").rglob("*.py")
                  if not p.read_text().strip())
    assert dedup["removed_by_reason"]["exact_dedup:duplicate"]["docs"] == vendored - empties
    # the files on disk say the same as stats.json
    out = run / stats["output"]["dir"]
    assert count_rows(out) == stats["output"]["docs"]
    assert len(removed_reasons(run)) == stats["input"]["docs"] - stats["output"]["docs"]
    kept = pq.read_table(out).column("path").to_pylist()
    assert len(set(kept)) == len(kept)
    assert len(result.plan.output_shards) == stats["shards"] > 1


def test_one_and_two_workers_give_identical_bytes(ray_session, tree_with_duplicates: Path,
                                                  tmp_path: Path) -> None:
    run_build(code_manifest(tree_with_duplicates), tmp_path, tmp_path / "w1", workers=1)
    run_build(code_manifest(tree_with_duplicates), tmp_path, tmp_path / "w2", workers=2)
    one, two = digest(tmp_path / "w1"), digest(tmp_path / "w2")
    assert one == two and len(one) > 20


def test_resume_after_losing_work_is_byte_identical(ray_session, tree_with_duplicates: Path,
                                                    tmp_path: Path) -> None:
    raw = code_manifest(tree_with_duplicates)
    run_build(raw, tmp_path, tmp_path / "full")
    expected = digest(tmp_path / "full")
    partial = tmp_path / "partial"
    shutil.copytree(tmp_path / "full", partial)
    # As if killed mid-run: some markers never written, a half-written temp file left,
    # a later step not started at all.
    markers = sorted((partial / "markers").rglob("*.json"))
    for marker in markers[::3]:
        marker.unlink()
    shutil.rmtree(partial / "stages" / "03-exact_dedup")
    (partial / "stats.json").unlink()
    # the name an atomic write gives its temporary (stages/storage.py)
    (partial / "stages" / "01-ingest" / f".tmp-{uuid.uuid4().hex}-shard.parquet"
     ).write_bytes(b"PAR1")
    run_build(raw, tmp_path, partial)
    assert digest(partial) == expected


def test_run_dir_of_another_manifest_is_refused(ray_session, stdlib_tree: Path,
                                                tmp_path: Path) -> None:
    run_build(code_manifest(stdlib_tree), tmp_path, tmp_path / "run")
    with pytest.raises(RunDirError, match="different manifest"):
        run_build(code_manifest(stdlib_tree, max_docs=7), tmp_path, tmp_path / "run")


def test_sources_of_every_reader_in_one_build(ray_session, tmp_path: Path) -> None:
    stack_parquet(tmp_path / "stack.parquet", stdlib_files("json"))
    raw = {"name": "mixed", "sources": [
        {"name": "stack", "kind": "code", "lang": "Python",
         "reader": {"type": "parquet", "paths": ["stack.parquet"]},
         "columns": {"text": "content", "stars": "max_stars_count"}},
        {"name": "topics", "kind": "text", "lang": "en",
         "reader": {"type": "python_object", "object": "pydoc_data.topics:topics"}},
        {"name": "json-pkg", "kind": "code",
         "reader": {"type": "tree", "root": str(STDLIB / "json"),
                    "exclude": ["*__pycache__*"]}},
    ], "stages": [{"exact_dedup": {}}]}
    run_build(raw, tmp_path, tmp_path / "run")
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    dedup = stats["stages"][1]
    # the tree holds the same json/*.py files as the parquet: all are exact duplicates,
    # and the parquet copies win because they carry stars
    removed = dedup["by_source"]["json-pkg"]["removed"]["docs"]
    assert removed == dedup["by_source"]["json-pkg"]["in"]["docs"] > 0
    assert dedup["by_source"]["stack"]["removed"]["docs"] == 0


def test_stage_resources_reach_ray_and_impossible_ones_are_refused(
        ray_session, stdlib_tree: Path, tmp_path: Path) -> None:
    raw = code_manifest(stdlib_tree)
    raw["stages"] = [{"exact_dedup": {"resources": {"cpus": 1, "memory": "200MB"}}}]
    run_build(raw, tmp_path, tmp_path / "ok")
    raw["stages"] = [{"exact_dedup": {"resources": {"cpus": 64}}}]
    with pytest.raises(RunError, match=r"asks for 64 CPUs .*stages\[\]\.resources"):
        run_build(raw, tmp_path, tmp_path / "too-big")


def test_removed_shards_of_a_step_share_one_schema(ray_session, tree_with_duplicates: Path,
                                                   tmp_path: Path) -> None:
    """removed/<step>/ reads as one dataset: documents removed by ingest (before syntax
    added its columns) and shards with nothing removed have the step's full schema."""
    import pyarrow.dataset as ds

    manifest = code_manifest(tree_with_duplicates)
    manifest["stages"] = [{"syntax": {}}, *manifest["stages"]]
    run = tmp_path / "run"
    run_build(manifest, tmp_path, run)
    stats = json.loads((run / "stats.json").read_text())
    first = sorted((run / "removed").iterdir())[0]
    assert "syntax" in first.name
    for step in sorted((run / "removed").iterdir()):
        shards = sorted(step.glob("*.parquet"))
        schemas = {pq.read_schema(path) for path in shards}
        assert len(schemas) == 1, step.name
        names = next(iter(schemas)).names
        assert names[-2:] == ["reason", "detail"]
        kept = pq.read_schema(next((run / "stages" / step.name).glob("*.parquet"))).names
        assert names[:-2] == kept
        table = ds.dataset(step).to_table()
        assert table.num_rows == sum(pq.read_metadata(p).num_rows for p in shards)
    ingest_removed = stats["stages"][0]["removed"]["docs"]
    assert ingest_removed > 0  # empty files: removed before syntax added its columns
    first_table = ds.dataset(first).to_table()
    from_ingest = first_table.filter(ds.field("reason").cast("string") == "ingest:empty")
    assert from_ingest.num_rows > 0
    assert from_ingest.column("syntax_checked").null_count == from_ingest.num_rows


def test_a_compressed_jsonl_in_several_units_builds_the_same_bytes(ray_session,
                                                                   tmp_path: Path) -> None:
    """A gzip jsonl of stdlib files cut into units of its decompressed bytes: one worker,
    two workers and a resume after losing markers give the same bytes, and the kept
    documents are the file's, each once."""
    import gzip

    files = sorted(p for p in (STDLIB / "email").rglob("*.py") if p.read_text().strip())
    lines = [json.dumps({"text": p.read_text(), "path": str(p.relative_to(STDLIB))})
             for p in files]
    plain = ("\n".join(lines) + "\n").encode()
    (tmp_path / "code.jsonl.gz").write_bytes(gzip.compress(plain, mtime=0))
    raw = {"name": "gz", "seed": 3, "shard": {"max_bytes": len(plain) // 5 + 1},
           "sources": [{"name": "code", "kind": "code", "lang": "Python",
                        "columns": {"path": "path"},
                        "reader": {"type": "jsonl", "paths": ["code.jsonl.gz"]}}],
           "stages": []}
    result = run_build(raw, tmp_path, tmp_path / "w1", workers=1)
    assert len(result.plan.units["code"]) == 5
    run_build(raw, tmp_path, tmp_path / "w2", workers=2)
    expected = digest(tmp_path / "w1")
    assert digest(tmp_path / "w2") == expected
    stats = json.loads((tmp_path / "w1" / "stats.json").read_text())
    kept = pq.read_table(tmp_path / "w1" / stats["output"]["dir"]).column("path").to_pylist()
    assert sorted(kept) == sorted(str(p.relative_to(STDLIB)) for p in files)
    for marker in sorted((tmp_path / "w2" / "markers").rglob("*.json"))[::2]:
        marker.unlink()
    (tmp_path / "w2" / "stats.json").unlink()
    run_build(raw, tmp_path, tmp_path / "w2", workers=2)
    assert digest(tmp_path / "w2") == expected
