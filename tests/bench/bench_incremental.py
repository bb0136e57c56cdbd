"""Deduplicating against an earlier run: B's dedup time grows with B, not with A.

Run by hand (not collected by pytest):  python -m tests.bench.bench_incremental [MB] [rounds]

B: MB megabytes of real Python files (this venv's site-packages, then the standard
library). A1 and A4: earlier runs of 1x and 4x B's size, real Go sources and C++
headers (Debian's golang-1.19-src and libboost1.74-dev, the fixture cache) plus a
copy of a tenth of B's files, so B finds duplicates in both. Both A runs are built
once with `index: true`; then B (exact_dedup and minhash with verify, `against` the
A run) is built `rounds` times against each, alternating A1 / A4 so a burst of load
on the shared machine hits both.

Timed: B's dedup steps (the global exact_dedup and minhash steps, from timings.json:
every phase, including reading A's index and verifying candidates against it).
The target: median(B vs A4) / median(B vs A1) <= 1.3.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lemur_data.pipeline.build import build
from lemur_data.pipeline.executor import connect
from lemur_data.pipeline.manifest import parse_manifest
from tests.fixtures.fetch import cache_dir, folder_name

GO, BOOST = (cache_dir() / folder_name(n) for n in ("golang-1.19-src", "libboost1.74-dev"))
ROOTS = [Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["stdlib"])]


def files(roots: list[Path], pattern: str, megabytes: float,
          skip: set[Path] | None = None) -> list[tuple[str, str]]:
    out, size = [], 0
    for root in roots:
        for path in sorted(root.rglob(pattern)):
            if size >= megabytes * 1e6:
                return out
            if skip and path in skip or not path.is_file():
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if text.strip():
                out.append((str(path), text))
                size += len(text.encode())
    return out


def write(folder: Path, name: str, docs: list[tuple[str, str]]) -> Path:
    path = folder / f"{name}.parquet"
    pq.write_table(pa.table({"path": [p for p, _ in docs], "content": [t for _, t in docs]}),
                   path)
    return path


def manifest(name: str, data: Path, against: str | None = None) -> dict[str, Any]:
    exact: dict[str, Any] = {"index": against is None}
    near: dict[str, Any] = {"threshold": 0.7, "verify": True, "index": against is None}
    if against:
        exact["against"] = near["against"] = [against]
    return {"name": name, "shard": {"max_docs": 2000, "max_bytes": "8MB"},
            "sources": [{"name": name, "kind": "code",
                         "columns": {"text": "content", "path": "path"},
                         "reader": {"type": "parquet", "paths": [str(data)]}}],
            "stages": [{"exact_dedup": exact}, {"minhash": near}]}


def dedup_seconds(run_dir: Path) -> float:
    steps = json.loads((run_dir / "timings.json").read_text())["steps"]
    return sum(v for k, v in steps.items() if k in ("02-exact_dedup", "04-minhash"))


def main(megabytes: float = 8.0, rounds: int = 3) -> None:
    if not GO.is_dir() or not BOOST.is_dir():
        sys.exit(f"{GO} or {BOOST} is missing: fetch the Debian fixtures "
                 "(tests/fixtures/fetch.py: golang-1.19-src, libboost1.74-dev)")
    connect(workers=os.cpu_count())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        b_docs = files(ROOTS, "*.py", megabytes)
        shared = b_docs[::10]
        b = write(root, "b", b_docs)
        runs = {}
        for scale in (1, 4):
            wanted = megabytes * scale - sum(len(t) for _, t in shared) / 1e6
            go = files([GO], "*.go", wanted)
            go += files([BOOST], "*.hpp", wanted - sum(len(t.encode()) for _, t in go) / 1e6)
            data = write(root, f"a{scale}", go + shared)
            run_dir = root / f"a{scale}"
            build(parse_manifest(manifest(f"a{scale}", data)), str(run_dir), progress="none")
            index = json.loads((run_dir / "index" / "index.json").read_text())
            runs[scale] = run_dir
            print(f"A{scale}: {len(go) + len(shared)} docs, "
                  f"{sum(len(t) for _, t in go + shared) / 1e6:.1f} MB, index of "
                  f"{index['minhash']['docs']} docs", flush=True)
        print(f"B: {len(b_docs)} docs, {sum(len(t) for _, t in b_docs) / 1e6:.1f} MB; "
              f"{len(shared)} also in A", flush=True)
        times: dict[int, list[float]] = {1: [], 4: []}
        for r in range(rounds):
            for scale in (1, 4):
                run_dir = root / f"b-{scale}-{r}"
                start = time.perf_counter()
                result = build(parse_manifest(manifest("b", b, str(runs[scale]))),
                               str(run_dir), progress="none")
                total = time.perf_counter() - start
                removed = {s["name"]: s.get("against") for s in result.stats["stages"]}
                times[scale].append(dedup_seconds(run_dir))
                print(f"round {r} B vs A{scale}: dedup steps {times[scale][-1]:.2f} s "
                      f"(build {total:.1f} s); removed {removed['exact_dedup']} "
                      f"{removed['minhash']}", flush=True)
        m1, m4 = statistics.median(times[1]), statistics.median(times[4])
        print(f"median dedup steps: vs A1 {m1:.2f} s, vs A4 {m4:.2f} s, ratio {m4 / m1:.2f} "
              f"(target <= 1.3)")


if __name__ == "__main__":
    main(*(float(a) if i == 0 else int(a) for i, a in enumerate(sys.argv[1:])))
