"""Deduplicating a new build against an earlier one (`against:`), on real near duplicates:
standard-library packages of CPython 3.9 as PyPy ships it (run A) and of Debian's
CPython 3.11 (run B holds both): fixed versions, whatever Python runs the tests. Many
files are byte-identical across the two, others differ by the edits of two releases.
The joint build (B's sources, no `against`) is the reference.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lemur_data.pipeline.build import build
from lemur_data.pipeline.cli import main
from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.pipeline.planner import plan_run
from lemur_data.stages.dedup_index.format import IndexedRunError
from tests.fixtures import cpython39_stdlib, debian_python_stdlib_tree
from tests.runs import digest

PACKAGES = ("json", "email", "http", "logging", "concurrent", "xml", "urllib", "asyncio",
            "importlib", "unittest", "multiprocessing")


def _write(folder: Path, name: str, root: Path, rng: random.Random) -> Path:
    paths = sorted(str(p.relative_to(root)) for package in PACKAGES
                   for p in (root / package).rglob("*.py"))
    table = pa.table({"content": [(root / p).read_text(encoding="utf-8") for p in paths],
                      "path": paths,
                      "stars": pa.array([rng.choice([None, 1, 9, 40]) for _ in paths], pa.int64()),
                      "license": [rng.choice([None, "unknown", "MIT"]) for _ in paths]})
    pq.write_table(table, folder / f"{name}.parquet")
    return folder / f"{name}.parquet"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    rng = random.Random(5)
    folder = tmp_path_factory.mktemp("incremental-corpus")
    debian = debian_python_stdlib_tree(folder / "debian-stdlib")
    return {"ours": _write(folder, "ours", cpython39_stdlib(), rng),
            "debian": _write(folder, "debian", debian, rng)}


def manifest(corpus: dict[str, Path], sources: list[str], against: list[str] | None = None,
             index: bool = False, **minhash: Any) -> dict[str, Any]:
    columns = {"text": "content", "path": "path", "stars": "stars", "license": "license"}
    exact: dict[str, Any] = {"partitions": 3, "index": index}
    near: dict[str, Any] = {"partitions": 3, "index": index, **minhash}
    if against:
        exact["against"] = near["against"] = against
    return {"name": "incremental", "shard": {"max_docs": 60},
            "sources": [{"name": s, "kind": "code", "columns": columns,
                         "reader": {"type": "parquet", "paths": [str(corpus[s])]}}
                        for s in sources],
            "stages": [{"exact_dedup": exact}, {"minhash": near}]}


def run(raw: dict[str, Any], run_dir: Path, workers: int = 2) -> Path:
    build(parse_manifest(raw, "test"), str(run_dir), workers=workers, progress="none")
    return run_dir


@pytest.fixture(scope="module")
def runs(ray_session, corpus, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("incremental-runs")
    a = run(manifest(corpus, ["ours"], index=True), root / "a")
    before = digest(a)
    b = run(manifest(corpus, ["ours", "debian"], against=[str(a)]), root / "b")
    joint = run(manifest(corpus, ["ours", "debian"]), root / "joint")
    return {"a": a, "b": b, "joint": joint, "a_before": before}


def kept(run_dir: Path) -> pa.Table:
    return pa.concat_tables([pq.read_table(p, columns=["id", "text", "source"])
                             for p in sorted(run_dir.glob("stages/05-*/*.parquet"))])


def removed(run_dir: Path, step: str) -> pa.Table:
    tables = [pq.read_table(p, columns=["id", "reason", "detail"])
              for p in sorted(run_dir.glob(f"removed/{step}/*.parquet"))]
    return pa.concat_tables(tables)


def test_earlier_run_is_read_never_written(runs) -> None:
    assert digest(runs["a"]) == runs["a_before"]


def test_documents_a_kept_are_removed_from_b_naming_run_and_id(runs) -> None:
    a_ids = set(kept(runs["a"]).column("id").to_pylist())
    a_texts = set(kept(runs["a"]).column("text").to_pylist())
    exact = removed(runs["b"], "03-exact_dedup").to_pylist()
    near = removed(runs["b"], "05-minhash").to_pylist()
    of_earlier = [r for r in exact if r["reason"] == "exact_dedup:duplicate_of_earlier"]
    near_earlier = [r for r in near if r["reason"] == "minhash:near_duplicate_of_earlier"]
    assert len(of_earlier) > 100 and len(near_earlier) > 10
    for row in of_earlier + near_earlier:
        kept_id = row["detail"].split()[3 if "near" in row["reason"] else 2]
        assert kept_id in a_ids, row
        assert row["detail"].endswith(f"in earlier run {runs['a']}"), row
    # No text A kept survives in B, and B's own copies of A's sources are all gone.
    b_kept = kept(runs["b"])
    assert not set(b_kept.column("text").to_pylist()) & a_texts
    assert set(b_kept.column("source").to_pylist()) <= {"debian"}
    # stats and report name what was deduplicated against what, with the counts
    import json

    stats = json.loads((runs["b"] / "stats.json").read_text())
    by_name = {s["name"]: s for s in stats["stages"]}
    assert by_name["exact_dedup"]["against"] == [{"run": str(runs["a"]),
                                                  "removed": len(of_earlier)}]
    assert by_name["minhash"]["against"] == [{"run": str(runs["a"]),
                                              "removed": len(near_earlier)}]
    card = (runs["b"] / "README.md").read_text()
    assert f"Deduplicated against earlier runs: `{runs['a']}` ({len(of_earlier):,} " in card
    assert f"`{runs['a']}` ({len(near_earlier):,} documents removed)" in card
    report = (runs["b"] / "report.html").read_text()
    assert f'<td class="n">{len(of_earlier)}</td><td>{runs["a"]}</td>' in report


def test_a_union_b_keeps_one_copy_of_each_joint_cluster(runs) -> None:
    """A + B keep exactly one document of every cluster the joint build keeps one of.
    The copies may differ: where a cluster spans A and B, A's copy survives (it has
    shipped); within a run, the usual priority (stars, license, id) picks."""
    joint_kept = set(kept(runs["joint"]).column("id").to_pylist())
    exact_of = {r["id"]: r["kept_id"] for p in sorted(
        (runs["joint"] / "work" / "02-exact_dedup" / "decisions").glob("*.parquet"))
        for r in pq.read_table(p).to_pylist()}
    near_of = {r["id"]: r["kept_id"] for p in sorted(
        (runs["joint"] / "work" / "04-minhash" / "decisions").glob("*.parquet"))
        for r in pq.read_table(p).to_pylist()}

    def cluster(doc: str) -> str:
        doc = exact_of.get(doc, doc)
        return near_of.get(doc, doc)

    ids = kept(runs["a"]).column("id").to_pylist() + kept(runs["b"]).column("id").to_pylist()
    clusters = [cluster(i) for i in ids]
    print(f"A {kept(runs['a']).num_rows} + B {kept(runs['b']).num_rows} kept; "
          f"joint {len(joint_kept)}")
    assert sorted(clusters) == sorted(joint_kept)


def test_one_worker_and_a_killed_run_give_the_same_bytes(runs, corpus, tmp_path: Path) -> None:
    raw = manifest(corpus, ["ours", "debian"], against=[str(runs["a"])])
    expected = digest(runs["b"])
    assert digest(run(raw, tmp_path / "one", workers=1)) == expected
    for phase, written in (("buckets", "earlier/pairs/part-0001/qb-0000.parquet"),
                           ("verify_earlier", "earlier/edges/part-0002.parquet")):
        resumed = tmp_path / f"resumed-{phase}"
        shutil.copytree(runs["b"], resumed)
        _interrupt(resumed, phase, written)
        run(raw, resumed)
        assert digest(resumed) == expected, phase


def _interrupt(resumed: Path, phase: str, written: str) -> None:
    """Leave a run as a kill in the middle of `phase` does: half its markers, a file a
    task wrote gone, a temp file, nothing after."""
    phases = ["signatures", "buckets", "verify_ship", "verify_check", "verify_earlier",
              "components"]
    markers, work = resumed / "markers" / "04-minhash", resumed / "work" / "04-minhash"
    done = sorted((markers / phase).glob("*.json"))
    for marker in done[len(done) // 2:]:
        marker.unlink()
    (work / written).unlink()
    (work / written).with_name(f".tmp-{'d' * 32}-" + (work / written).name).write_bytes(b"x")
    for later in phases[phases.index(phase) + 1:]:
        shutil.rmtree(markers / later, ignore_errors=True)
    shutil.rmtree(work / "decisions")
    for folder in ("markers", "stages", "removed"):
        shutil.rmtree(resumed / folder / "05-minhash")
    (resumed / "stats.json").unlink()


def test_index_command_writes_the_same_index_and_is_a_noop_after(runs, corpus,
                                                                 tmp_path: Path) -> None:
    plain = run(manifest(corpus, ["ours"]), tmp_path / "plain")
    assert not (plain / "index").exists()
    assert main(["index", "--run-dir", str(plain)]) == 0
    ours = {k: v for k, v in digest(plain / "index").items() if k != "index.json"}
    theirs = {k: v for k, v in digest(runs["a"] / "index").items() if k != "index.json"}
    assert ours == theirs and len(ours) == 3 + 3 * 3
    stamp = (plain / "index" / "index.json").stat().st_mtime_ns
    assert main(["index", "--run-dir", str(plain)]) == 0
    assert (plain / "index" / "index.json").stat().st_mtime_ns == stamp


def test_run_without_verify_gets_its_shingle_sets_from_its_text(runs, corpus,
                                                                tmp_path: Path) -> None:
    unverified = run(manifest(corpus, ["ours"], index=True, verify=False), tmp_path / "nv")
    for part in range(3):
        name = f"index/minhash/shingles/part-{part:04d}.parquet"
        assert pq.read_table(unverified / name).equals(pq.read_table(runs["a"] / name))
    # Without verification on either side, shared buckets decide; the same copies leave.
    b = run(manifest(corpus, ["ours", "debian"], against=[str(unverified)], verify=False),
            tmp_path / "nv-b")
    assert set(kept(b).column("source").to_pylist()) <= {"debian"}
    near = [r for r in removed(b, "05-minhash").to_pylist()
            if r["reason"] == "minhash:near_duplicate_of_earlier"]
    verified = [r for r in removed(runs["b"], "05-minhash").to_pylist()
                if r["reason"] == "minhash:near_duplicate_of_earlier"]
    assert len(near) >= len(verified) > 10


@pytest.mark.parametrize(("change", "named"), [
    ({"seed": 7}, "'seed'"), ({"permutations": 128}, "'permutations'"),
    ({"ngram": 3}, "'ngram'"), ({"tokenizer": "whitespace"}, "'tokenizer'"),
    ({"bands": 16, "rows": 16}, "'bands'")])
def test_other_minhash_parameters_are_refused_by_name(runs, corpus, change, named) -> None:
    raw = manifest(corpus, ["debian"], against=[str(runs["a"])], **change)
    with pytest.raises(IndexedRunError, match=named):
        plan_run(parse_manifest(raw, "test"), "/nonexistent/run")


def test_other_exact_normalization_another_format_or_no_index_are_refused(
        runs, corpus, tmp_path: Path) -> None:
    raw = manifest(corpus, ["debian"], against=[str(runs["a"])])
    raw["stages"][0]["exact_dedup"]["normalize"] = "whitespace"
    with pytest.raises(IndexedRunError, match="'normalize'"):
        plan_run(parse_manifest(raw, "test"), "/nonexistent/run")
    old = tmp_path / "old"
    shutil.copytree(runs["a"], old)
    index = old / "index" / "index.json"
    index.write_text(index.read_text().replace('"format": 1', '"format": 0'))
    with pytest.raises(IndexedRunError, match="format 0"):
        plan_run(parse_manifest(manifest(corpus, ["debian"], against=[str(old)]), "test"), "x")
    shutil.rmtree(old / "index")
    with pytest.raises(IndexedRunError, match="lemur-data index --run-dir"):
        plan_run(parse_manifest(manifest(corpus, ["debian"], against=[str(old)]), "test"), "x")


def test_a_section_of_another_format_is_refused_until_the_index_is_rebuilt(
        runs, corpus, tmp_path: Path) -> None:
    """A stage's section carries the version of its files (`index_format`): an index
    whose minhash files are of another version is refused, and `lemur-data index`
    rebuilds it (otherwise a no-op) from the run's work files."""
    old = tmp_path / "old"
    shutil.copytree(runs["a"], old)
    path = old / "index" / "index.json"
    index = json.loads(path.read_text())
    assert index["minhash"]["format"] == 1 and index["exact"]["format"] == 1
    index["minhash"]["format"] = 2
    path.write_text(json.dumps(index))
    again = manifest(corpus, ["debian"], against=[str(old)])
    with pytest.raises(IndexedRunError, match="its minhash index has format 2"):
        plan_run(parse_manifest(again, "test"), "x")
    assert main(["index", "--run-dir", str(old)]) == 0
    assert json.loads(path.read_text())["minhash"]["format"] == 1
    assert json.loads(path.read_text()) == json.loads((runs["a"] / "index" / "index.json")
                                                      .read_text())
    plan_run(parse_manifest(again, "test"), "x")


def test_cli_plan_shows_the_extra_reads_and_build_refuses_by_name(runs, corpus, tmp_path: Path,
                                                                   capsys) -> None:
    import yaml

    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(manifest(corpus, ["debian"], against=[str(runs["a"])])))
    assert main(["plan", "--manifest", str(path)]) == 0
    out = capsys.readouterr().out
    assert "deduplicated against earlier runs" in out
    assert f"exact_dedup  {runs['a']}: " in out and f"minhash      {runs['a']}: " in out
    wrong = manifest(corpus, ["debian"], against=[str(runs["a"])], ngram=4)
    path.write_text(yaml.safe_dump(wrong))
    assert main(["build", "--manifest", str(path), "--run-dir", str(tmp_path / "r")]) == 2
    assert "minhash parameter 'ngram' differs" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "r").exists()
    assert main(["index", "--run-dir", str(tmp_path)]) == 2
    assert "not a finished run" in " ".join(capsys.readouterr().err.split())


def test_other_partition_counts_read_the_matching_partitions(runs, corpus,
                                                             tmp_path: Path) -> None:
    """B with 2 partitions against A's 3: every earlier partition that can hold a B
    partition's rows is read (gcd 1: all, filtered), and the decisions are the same."""
    raw = manifest(corpus, ["ours", "debian"], against=[str(runs["a"])])
    for entry in raw["stages"]:
        next(iter(entry.values()))["partitions"] = 2
    other = run(raw, tmp_path / "two")
    for step in ("03-exact_dedup", "05-minhash"):
        mine, theirs = removed(other, step), removed(runs["b"], step)
        def by_id(row: dict) -> str:
            return row["id"]

        assert sorted(mine.to_pylist(), key=by_id) == sorted(theirs.to_pylist(), key=by_id)


def test_verification_reads_only_the_row_groups_of_candidates(runs, tmp_path: Path) -> None:
    """Earlier shingle sets are read by row group: for a few candidate keys, only the
    groups whose key range holds them (write_keyed: 256 sets per group)."""
    from lemur_data.stages.dedup_index.format import groups_holding, read_keyed, write_keyed

    real = pq.read_table(runs["a"] / "index" / "minhash" / "shingles" / "part-0000.parquet")
    sets = real.column("hashes").to_pylist()
    rows = 1000  # the index's real sets, repeated under distinct keys: 4 row groups
    table = pa.table({"key": pa.array(range(0, 3 * rows, 3), pa.uint64()),
                      "hashes": pa.array([sets[i % len(sets)] for i in range(rows)],
                                         pa.list_(pa.uint32()))})
    path = tmp_path / "sets.parquet"
    write_keyed(str(path), table)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 4
    wanted = np.array([3 * 900, 3 * 10, 3 * 10 + 1], np.uint64)  # the last one is absent
    assert groups_holding(meta, 0, np.sort(wanted)) == [0, 3]
    got = read_keyed(str(path), wanted)
    assert got.column("key").to_pylist() == [30, 2700]
    assert got.column("hashes").to_pylist() == [sets[10 % len(sets)], sets[900 % len(sets)]]
    assert read_keyed(str(path), np.array([5 * rows], np.uint64)).num_rows == 0


def test_two_earlier_runs_each_count_what_they_removed(runs, corpus, tmp_path: Path) -> None:
    """Against [A, D] (D: Debian's copy, built alone): every document of a build over both
    sources is a copy of one of them, so nothing is kept; an exact copy found in both is
    credited to the first run listed, and each run's count is what the removed say."""
    d = run(manifest(corpus, ["debian"], index=True), tmp_path / "d")
    both = run(manifest(corpus, ["ours", "debian"], against=[str(runs["a"]), str(d)]),
               tmp_path / "both")
    assert kept(both).num_rows == 0
    import json

    stats = {s["name"]: s for s in json.loads((both / "stats.json").read_text())["stages"]}
    for stage, step in (("exact_dedup", "03-exact_dedup"), ("minhash", "05-minhash")):
        details = [r["detail"] for r in removed(both, step).to_pylist()
                   if r["reason"].endswith("_of_earlier")]
        counted = {entry["run"]: entry["removed"] for entry in stats[stage]["against"]}
        assert list(counted) == [str(runs["a"]), str(d)]
        for name, count in counted.items():
            assert count == sum(x.endswith(f"in earlier run {name}") for x in details)
    exact = {e["run"]: e["removed"] for e in stats["exact_dedup"]["against"]}
    assert exact[str(runs["a"])] > 100 and exact[str(d)] > 20


def test_a_resume_is_refused_when_an_earlier_run_index_changed(runs, corpus,
                                                               tmp_path: Path) -> None:
    """The manifest names the earlier runs, not what they hold: a run folder records
    each `against` index (by its index.json) and refuses to resume once one changed,
    rather than mix decisions made against the old and the new index."""
    import json

    from lemur_data.pipeline.build import RunDirError, earlier_indexes, prepare_run_dir

    recorded = json.loads((runs["b"] / "manifest.json").read_text())["against_indexes"]
    b_manifest = parse_manifest(manifest(corpus, ["ours", "debian"], against=[str(runs["a"])]),
                                "test")
    assert recorded == earlier_indexes(b_manifest) and list(recorded) == [str(runs["a"])]
    a2 = tmp_path / "a2"
    shutil.copytree(runs["a"] / "index", a2 / "index")
    later = parse_manifest(manifest(corpus, ["debian"], against=[str(a2)]), "test")
    prepare_run_dir(later, str(tmp_path / "c"))
    prepare_run_dir(later, str(tmp_path / "c"))  # unchanged: resumes
    index = json.loads((a2 / "index" / "index.json").read_text())
    index["kept_docs"] += 1  # the earlier run rebuilt with other data
    (a2 / "index" / "index.json").write_text(json.dumps(index))
    with pytest.raises(RunDirError, match="a2, whose index has changed"):
        prepare_run_dir(later, str(tmp_path / "c"))
