"""The issue's acceptance on the demo: run A on some of the demo's sources, run B on all of
them against A, and the joint build (B without `against`) as the reference.

The demo manifest is used as shipped, minus tokenizing, mixing and the launcher (they
follow dedup and change nothing it decides). A + B must keep one copy of every cluster
the joint build keeps one of, A must be byte-identical before and after B, and no
document B keeps may duplicate one A kept (exactly, or at true Jaccard >= 0.7 on the
stage's own shingles).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from lemur_data.pipeline.build import build
from lemur_data.pipeline.manifest import parse_manifest
from tests.runs import digest, drop_orphan_stages

REPO = Path(__file__).resolve().parents[1]
A_SOURCES = ("python-stdlib", "python-help-topics")


def demo(sources: tuple[str, ...] | None = None, against: str | None = None,
         index: bool = False) -> dict[str, Any]:
    raw = yaml.safe_load((REPO / "manifests" / "demo.yaml").read_text())
    for key in ("tokenizer", "mixture", "output", "train"):
        raw.pop(key, None)
    if sources:
        raw["sources"] = [s for s in raw["sources"] if s["name"] in sources]
        raw = drop_orphan_stages(raw)  # the notebooks stage reads only `notebooks`
    # repo_context joins the kept files of a repository after dedup: the comparison of
    # kept texts here is about the dedup stages, so the stages after them are left out
    raw["stages"] = [e for e in raw["stages"] if next(iter(e)) != "repo_context"]
    for entry in raw["stages"]:
        (name, params), = entry.items()
        if name in ("exact_dedup", "minhash"):
            params = dict(params or {}, index=index)
            if against:
                params["against"] = [against]
            entry[name] = params
    return raw


def run(raw: dict[str, Any], run_dir: Path) -> Path:
    build(parse_manifest(raw, "demo", REPO / "manifests"), str(run_dir), progress="none")
    return run_dir


def kept(run_dir: Path) -> pa.Table:
    last = sorted((run_dir / "stages").iterdir())[-1]
    return pa.concat_tables([pq.read_table(p, columns=["id", "text", "kind"])
                             for p in sorted(last.glob("*.parquet"))])


def decisions(run_dir: Path, stage: str) -> dict[str, str]:
    work = next(d for d in (run_dir / "work").iterdir() if d.name.endswith(f"-{stage}"))
    return {r["id"]: r["kept_id"] for p in sorted((work / "decisions").glob("*.parquet"))
            for r in pq.read_table(p, columns=["id", "kept_id"]).to_pylist()}


@pytest.fixture(scope="module")
def runs(ray_session, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("incremental-demo")
    a = run(demo(A_SOURCES, index=True), root / "a")
    before = digest(a)
    b = run(demo(against=str(a)), root / "b")
    joint = run(demo(), root / "joint")
    return {"a": a, "b": b, "joint": joint, "before": before}


@pytest.mark.slow
def test_demo_a_plus_b_equals_the_joint_build(runs) -> None:
    assert digest(runs["a"]) == runs["before"]
    exact_of, near_of = decisions(runs["joint"], "exact_dedup"), decisions(runs["joint"],
                                                                            "minhash")

    def cluster(doc: str) -> str:
        doc = exact_of.get(doc, doc)
        return near_of.get(doc, doc)

    a_kept, b_kept, joint_kept = kept(runs["a"]), kept(runs["b"]), kept(runs["joint"])
    clusters = [cluster(i) for i in a_kept.column("id").to_pylist()
                + b_kept.column("id").to_pylist()]
    print(f"A kept {a_kept.num_rows}, B kept {b_kept.num_rows}, joint kept "
          f"{joint_kept.num_rows}; distinct joint clusters of A + B {len(set(clusters))}")
    assert sorted(clusters) == sorted(joint_kept.column("id").to_pylist())
    assert not set(a_kept.column("text").to_pylist()) & set(b_kept.column("text").to_pylist())


@pytest.mark.slow
def test_demo_b_keeps_no_near_duplicate_of_what_a_kept(runs) -> None:
    from tests.jaccard import jaccard

    found = 0
    for kind, mode in (("code", "code"), ("text", "words")):
        a, b = kept(runs["a"]), kept(runs["b"])
        a = a.filter(pa.compute.equal(a.column("kind"), kind))
        b = b.filter(pa.compute.equal(b.column("kind"), kind))
        found += int((jaccard(b.column("text"), a.column("text"), mode) >= 0.7).any(axis=1).sum())
    print(f"B documents at J >= 0.7 with a document A kept: {found}")
    assert found == 0
