"""repo_context on real packages: the demo's site-packages, each top-level package a
repository. The documents cut at their separators give back exactly the kept files,
a file follows the files it imports (outside cycles), and the output is the same
bytes for 1 and 2 workers and after a kill."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lemur_data.filters.repo_deps import (
    RepoIndex,
    _strong_components,
    dependencies,
    dependency_order,
)
from lemur_data.filters.repo_format import (
    RepoFile,
    chunks_by_bytes,
    path_comments,
    split_starcoder2,
    starcoder2,
)
from lemur_data.pipeline.build import build
from lemur_data.pipeline.manifest import parse_manifest

SITE = Path(numpy.__file__).resolve().parents[1]
PACKAGES = ["rich", "requests", "click", "yaml", "jsonschema", "urllib3"]


def _manifest(workers_hint: str = "") -> dict:
    return {"name": "repo-context", "shard": {"max_docs": 60},
            "sources": [{"name": "site", "kind": "code",
                         "reader": {"type": "tree", "root": str(SITE), "subdirs": PACKAGES,
                                    "repo_depth": 1, "include": ["*.py", "*.pyi"]}}],
            "stages": [{"exact_dedup": {}},
                       {"repo_context": {"max_bytes": "200KB", "partitions": 3}}]}


def _run(run: Path, workers: int) -> Path:
    build(parse_manifest(_manifest(), base_dir=run.parent), str(run), workers=workers,
          progress="none")
    return run


@pytest.fixture(scope="module")
def reference_run(ray_session, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("rc") / "run", workers=2)


def _table(run: Path, step: str) -> pa.Table:
    shards = sorted(run.glob(f"stages/{step}/*.parquet"))
    return pa.concat_tables([pq.read_table(p) for p in shards], promote_options="default")


def test_documents_cut_at_separators_give_back_the_kept_files(reference_run: Path) -> None:
    before = _table(reference_run, "03-exact_dedup")
    files = {r["id"]: r for r in before.to_pylist()}
    after = _table(reference_run, "05-repo_context")
    assert after.num_rows < len(files) / 5
    seen: list[str] = []
    with_metadata = without = 0
    for doc in after.to_pylist():
        name, parts = split_starcoder2(doc["text"])
        assert len(parts) == len(doc["repo_files"])
        for (path, text), file_id in zip(parts, doc["repo_files"], strict=True):
            assert text == files[file_id]["text"]
            assert path is None or path == files[file_id]["path"]
            assert files[file_id]["repo"] == doc["repo"]
        if name is None:
            without += 1
        else:
            assert name == doc["repo"]
            with_metadata += 1
        assert len(doc["text"].encode()) <= 200_000 or len(parts) == 1
        seen += doc["repo_files"]
    assert sorted(seen) == sorted(files)  # every kept file exactly once
    assert with_metadata and without
    repos = [d["repo"] for d in after.to_pylist()]
    assert len(set(repos)) == len(PACKAGES) and len(repos) > len(PACKAGES)  # some were split


def test_a_file_follows_what_it_imports_outside_cycles(reference_run: Path) -> None:
    before = _table(reference_run, "03-exact_dedup").to_pylist()
    after = sorted(_table(reference_run, "05-repo_context").to_pylist(),
                   key=lambda d: (d["repo"], d["repo_part"]))
    checked = 0
    for repo in PACKAGES:
        rows = {r["path"]: r for r in before if r["repo"] == repo}
        index = RepoIndex(list(rows))
        deps = {p: dependencies(p, r["text"], r["lang"], index) for p, r in rows.items()}
        ordered = sorted(rows)
        component = _strong_components(ordered, deps, {p: i for i, p in enumerate(ordered)})
        path_of = {r["id"]: p for p, r in rows.items()}
        sequence = [path_of[i] for d in after if d["repo"] == repo for i in d["repo_files"]]
        assert sorted(sequence) == ordered
        position = {p: i for i, p in enumerate(sequence)}
        for path, needed in deps.items():
            for dep in needed:
                if component[dep] != component[path]:
                    assert position[dep] < position[path], f"{path} before {dep}"
                    checked += 1
    assert checked >= 300


def test_same_bytes_with_one_worker_and_after_a_kill(reference_run: Path,
                                                     tmp_path: Path) -> None:
    def snapshot(run: Path) -> dict[str, bytes]:
        return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
                if p.is_file() and p.name != "timings.json" and ".tmp-" not in p.name}

    expected = snapshot(reference_run)
    assert snapshot(_run(tmp_path / "one" / "run", workers=1)) == expected
    resumed = tmp_path / "resumed" / "run"
    shutil.copytree(reference_run, resumed)
    # killed in the build phase: half its tasks done, the applier step not run
    markers = resumed / "markers" / "04-repo_context"
    done = sorted((markers / "build").glob("*.json"))
    for marker in done[len(done) // 2:]:
        marker.unlink()
    (resumed / "work" / "04-repo_context" / "decisions" / "docs" / done[-1].name.replace(
        ".json", ".parquet")).unlink()
    for folder in ("markers", "stages", "removed"):
        shutil.rmtree(resumed / folder / "05-repo_context", ignore_errors=True)
    (resumed / "stats.json").unlink()
    build(parse_manifest(_manifest(), base_dir=resumed.parent), str(resumed), workers=2,
          progress="none")
    assert snapshot(resumed) == expected


def test_formats_and_chunks_on_real_files() -> None:
    paths = sorted((SITE / "requests").glob("*.py"))
    files = [RepoFile(str(p.relative_to(SITE)), p.read_text(), "Python") for p in paths]
    text = starcoder2("requests", files, metadata=True)
    assert split_starcoder2(text) == ("requests", [(f.path, f.text) for f in files])
    bare = starcoder2("requests", files, metadata=False)
    assert split_starcoder2(bare) == (None, [(None, f.text) for f in files])
    commented = path_comments(files)
    assert commented.startswith(f"# {files[0].path}\n{files[0].text}")
    sizes = [len(f.text.encode()) for f in files]
    runs = chunks_by_bytes(sizes, 30_000)
    assert [i for r in runs for i in r] == list(range(len(files)))
    assert all(sum(sizes[i] for i in r) <= 30_000 or len(r) == 1 for r in runs)
    # a cycle is tolerated: every file still appears once
    assert sorted(dependency_order(["a", "b", "c"], {"a": {"b"}, "b": {"a"}, "c": {"a"}})) == [
        "a", "b", "c"]


def test_mixture_weighs_repository_documents_apart(reference_run: Path) -> None:
    """`code@repo` takes the repository documents, `code` the single files."""
    from lemur_data.stages.mix.params import assign

    after = _table(reference_run, "05-repo_context")
    before = _table(reference_run, "03-exact_dedup")
    both = pa.concat_tables([after, before], promote_options="default")
    which = assign(both, ["code", "code@repo", "site:Python@repo"])
    assert set(which[: after.num_rows]) == {2}  # most specific first: source:lang@repo
    assert set(which[after.num_rows:]) == {0}
    assert set(assign(both, ["code", "code@repo"])[: after.num_rows]) == {1}
    assert set(assign(before, ["code", "code@repo"])) == {0}  # no repo_files column at all
    manifest = _manifest()
    manifest["mixture"] = {"total_tokens": 1e6, "weights": {"code@repo": 1, "code": 2}}
    manifest["tokenizer"] = {}
    parse_manifest(manifest, base_dir=reference_run.parent)  # `@repo` keys are valid


def test_random_order_and_path_comments(tmp_path: Path) -> None:
    """Group and build tasks run directly on one real package: `random` order is fixed by
    the seed (another seed, another order) and `path_comments` puts every file's path
    before its text."""
    from lemur_data.stages.repo_context import BuildPartition, GroupShard, RepoContextParams
    from lemur_data.stages.storage import documents_table, write_parquet_atomic

    paths = sorted((SITE / "click").glob("*.py"))
    rows = [{"id": f"f{i:03d}", "text": p.read_text(), "source": "site", "kind": "code",
             "lang": "Python", "path": str(p.relative_to(SITE)), "repo": "click"}
            for i, p in enumerate(paths)]
    shard = tmp_path / "s0.parquet"
    write_parquet_atomic(str(shard), documents_table(rows))
    params = RepoContextParams(order="random", format="path_comments", partitions=1,
                               max_bytes=10**9)
    GroupShard("s0", str(shard), (str(tmp_path / "g.parquet"),), params)()
    orders = []
    for seed in (1, 1, 2):
        out = tmp_path / f"seed{seed}-{len(orders)}"
        BuildPartition((str(tmp_path / "g.parquet"),), str(out / "docs.parquet"),
                       str(out / "merged.parquet"), params, seed)()
        doc = pq.read_table(out / "docs.parquet").to_pylist()[0]
        orders.append(doc["repo_files"])
        text, at = doc["text"], 0
        for file_id in doc["repo_files"]:
            row = rows[int(file_id[1:])]
            block = f"# {row['path']}\n{row['text']}"
            at = text.index(block, at) + len(block)
        assert pq.read_table(out / "merged.parquet").num_rows == len(rows) - 1
    assert orders[0] == orders[1] != orders[2]
    assert sorted(orders[0]) == [r["id"] for r in rows] and orders[0] != sorted(orders[0])
