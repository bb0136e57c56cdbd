"""How long `inspect`, `explain` and `diff` take on a finished demo run, as a user runs
them: `lemur-data ...` in a new process (imports included), wall and CPU seconds.

    lemur-data build -m manifests/demo.yaml --run-dir runs/demo
    python -m tests.bench.bench_workbench runs/demo [OTHER_RUN_OF_THE_SAME_INPUT]

Without a second run, diff compares the run with a copy of itself (the same work: every
document's fate in both, paired). The explained document is a near duplicate (its
survivor is followed), else the first removed one.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

REPEAT = 3


def run(argv: list[str]) -> tuple[float, float]:
    before = os.times()
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "lemur_data.pipeline.cli", *argv],
                            capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - start
    after = os.times()
    if result.returncode != 0:
        raise SystemExit(f"{argv}: {result.stderr[-2000:]}")
    return wall, (after.children_user + after.children_system
                  - before.children_user - before.children_system)


def a_document(run_dir: Path) -> str:
    removed = [p for p in sorted((run_dir / "removed").rglob("*.parquet"))]
    rows = [r for p in removed for r in pq.read_table(p, columns=["id", "reason"]).to_pylist()]
    near = [r["id"] for r in rows if r["reason"] == "minhash:near_duplicate"]
    return sorted(near)[0] if near else rows[0]["id"]


def main(argv: list[str]) -> None:
    first = Path(argv[0])
    with tempfile.TemporaryDirectory(prefix="lemur-wb-") as tmp:
        second = Path(argv[1]) if len(argv) > 1 else Path(tmp) / "copy"
        if len(argv) == 1:
            shutil.copytree(first, second)
        commands = {
            "inspect": ["inspect", "--run-dir", str(first), "-n", "3"],
            "inspect --outcome kept --by source": ["inspect", "--run-dir", str(first),
                                                   "--outcome", "kept", "--by", "source"],
            "explain": ["explain", "--run-dir", str(first), a_document(first)],
            "diff": ["diff", str(first), str(second)],
        }
        print(f"{'command':<38} {'wall s (median)':>15} {'CPU s (median)':>15}")
        for name, command in commands.items():
            times = [run(command) for _ in range(REPEAT)]
            print(f"{name:<38} {statistics.median(t[0] for t in times):>15.2f} "
                  f"{statistics.median(t[1] for t in times):>15.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
