"""Recall and precision of deduplicating against an earlier run, on real near duplicates:
the standard library of the running CPython 3.11.7 (run A) and Debian's 3.11 (run B,
against A). Ground truth: the true Jaccard of every (B, A-kept) pair on the stage's own
shingles (5-token code shingles), computed exactly as sparse set intersections.

What is scored: B's documents that reach its dedup stages, except those B removes as an
exact copy of another B document (their surviving copy stands for them). Predicted:
removed as `duplicate_of_earlier` or `near_duplicate_of_earlier`. True: Jaccard >= 0.7
with a document A kept.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jaccard import jaccard

from lemur_data.pipeline.build import build
from lemur_data.pipeline.manifest import parse_manifest

STDLIB = Path(sysconfig.get_paths()["stdlib"])
DEBIAN = Path("/usr/lib/python3.11")  # .ci/apt-packages.txt: libpython3.11-stdlib
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
    assert DEBIAN.is_dir(), "Debian's python3.11 standard library is needed (apt)"
    a, b = tmp_path / "a", tmp_path / "b"
    build(parse_manifest(manifest("cpython-a", STDLIB)), str(a), progress="none")
    build(parse_manifest(manifest("cpython-b", DEBIAN, [str(a)])), str(b), progress="none")

    a_kept = table(a / "stages" / "05-minhash", ["id", "text"])
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

    truth = (jaccard(b_in.column("text"), a_kept.column("text")) >= 0.7).any(axis=1)

    hits = int((truth & predicted & scored).sum())
    recall = hits / int((truth & scored).sum())
    precision = hits / int((predicted & scored).sum())
    exact = sum(r == "exact_dedup:duplicate_of_earlier" for r in reasons.values())
    near = sum(r == "minhash:near_duplicate_of_earlier" for r in reasons.values())
    print(f"A kept {a_kept.num_rows}, B scored {int(scored.sum())}: true "
          f"{int((truth & scored).sum())}, predicted {int((predicted & scored).sum())}, "
          f"recall {recall:.4f}, precision {precision:.4f}; of earlier: {exact} exact, "
          f"{near} near")
    # both kinds occur: byte-identical modules and patch-level edits
    assert exact >= 100 and near >= 20
    assert recall >= 0.99 and precision >= 0.99
