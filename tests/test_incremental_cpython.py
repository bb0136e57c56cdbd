"""Recall and precision of deduplicating against an earlier run, on real near duplicates:
CPython 3.9's standard library as PyPy ships it (run A) and Debian's CPython 3.11 (run
B, against A): fixed versions, whatever Python runs the tests. Ground truth: the true
Jaccard of every (B, A-kept) pair on the stage's own shingles (5-token code shingles),
computed exactly as sparse set intersections.

What is scored: B's documents that reach its dedup stages, except those B removes as an
exact copy of another B document (their surviving copy stands for them). Predicted:
removed as `duplicate_of_earlier` or `near_duplicate_of_earlier`. True, two ways:
- pairwise: Jaccard >= 0.7 with a document A kept;
- by cluster (the stage's semantics, docs/incremental.md): the document's connected
  component over true-Jaccard >= 0.7 edges (B-B, and B to every document A
  deduplicated: kept, or removed in favour of a kept one) holds an A document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lemur_data.pipeline.build import build
from lemur_data.pipeline.manifest import parse_manifest
from tests.fixtures import cpython39_stdlib, debian_python_stdlib_tree
from tests.jaccard import jaccard

EXCLUDE = ["site-packages/*", "dist-packages/*", "test/*", "*/tests/*", "idlelib/*",
           "lib2to3/*", "*/__pycache__/*", "config-*/*"]


def manifest(name: str, root: Path, against: list[str] | None = None) -> dict[str, Any]:
    stages: list[dict[str, Any]] = [{"exact_dedup": {"index": True}},
                                    {"minhash": {"threshold": 0.7, "verify": True,
                                                 "index": True}}]
    if against:
        for entry in stages:
            next(iter(entry.values()))["against"] = against
    return {"name": name, "shard": {"max_docs": 200},
            "sources": [{"name": "cpython", "kind": "code",
                         "reader": {"type": "tree", "root": str(root), "include": ["*.py"],
                                    "exclude": EXCLUDE}}],
            "stages": stages}


def table(folder: Path, columns: list[str]) -> pa.Table:
    return pa.concat_tables([pq.read_table(p, columns=columns)
                             for p in sorted(folder.glob("*.parquet"))])


@pytest.mark.slow
def test_recall_and_precision_against_the_earlier_cpython(ray_session, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    debian = debian_python_stdlib_tree(tmp_path / "debian-stdlib")
    build(parse_manifest(manifest("cpython-a", cpython39_stdlib())), str(a), progress="none")
    build(parse_manifest(manifest("cpython-b", debian, [str(a)])), str(b), progress="none")

    a_kept = table(a / "stages" / "05-minhash", ["id", "text"])
    a_seen = table(a / "stages" / "01-ingest", ["id", "text"])  # all reach A's dedup
    b_in = table(b / "stages" / "01-ingest", ["id", "text"])
    reasons = {}
    for step in ("03-exact_dedup", "05-minhash"):
        removed = table(b / "removed" / step, ["id", "reason"]) \
            if any((b / "removed" / step).glob("*.parquet")) else None
        if removed is not None:
            reasons.update(zip(removed.column("id").to_pylist(),
                               removed.column("reason").to_pylist(), strict=True))
    scored = np.array([reasons.get(i) != "exact_dedup:duplicate"
                       for i in b_in.column("id").to_pylist()])
    predicted = np.array([(reasons.get(i) or "").endswith("_of_earlier")
                          for i in b_in.column("id").to_pylist()])

    pairwise = (jaccard(b_in.column("text"), a_kept.column("text")) >= 0.7).any(axis=1)
    by_cluster = _reaches_a(jaccard(b_in.column("text"), b_in.column("text")) >= 0.7,
                            jaccard(b_in.column("text"), a_seen.column("text")) >= 0.7)

    def score(truth: np.ndarray) -> tuple[float, float]:
        hits = int((truth & predicted & scored).sum())
        return hits / int((truth & scored).sum()), hits / int((predicted & scored).sum())

    recall, precision = score(pairwise)
    cluster_recall, cluster_precision = score(by_cluster)
    truth = pairwise
    exact = sum(r == "exact_dedup:duplicate_of_earlier" for r in reasons.values())
    near = sum(r == "minhash:near_duplicate_of_earlier" for r in reasons.values())
    print(f"A kept {a_kept.num_rows}, B scored {int(scored.sum())}: true "
          f"{int((truth & scored).sum())}, predicted {int((predicted & scored).sum())}, "
          f"recall {recall:.4f}, precision {precision:.4f}; by cluster: true "
          f"{int((by_cluster & scored).sum())}, recall {cluster_recall:.4f}, precision "
          f"{cluster_precision:.4f}; of earlier: {exact} exact, {near} near")
    # both kinds occur: byte-identical modules and patch-level edits
    assert exact >= 100 and near >= 20
    assert recall >= 0.99 and precision >= 0.99
    assert cluster_recall >= 0.99 and cluster_precision >= 0.99


def _reaches_a(within_b: np.ndarray, b_to_a: np.ndarray) -> np.ndarray:
    """Per B document: does its component (B-B edges plus B-A edges) hold an A document?"""
    from scipy.sparse import bmat, coo_matrix
    from scipy.sparse.csgraph import connected_components

    n_b, n_a = b_to_a.shape
    graph = bmat([[coo_matrix(within_b), coo_matrix(b_to_a)], [None, coo_matrix((n_a, n_a))]])
    _, labels = connected_components(graph, directed=False)
    with_a = np.zeros(labels.max() + 1, dtype=bool)
    with_a[labels[n_b:]] = True
    return with_a[labels[:n_b]]
