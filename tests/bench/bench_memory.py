"""Peak memory per worker as the input grows 10x (it should stay flat).

    python -m tests.bench.bench_memory [--scale 10] [--base 4] [--manifest manifests/demo.yaml]
                                       [--scale-partitions] [--task-log DIR]

Builds a corpus of real standard-library files (the base), and one `--scale` times
larger (copies of the base, each with its files perturbed so they are not exact
duplicates), runs the manifest's stages on both with the demo's shard size, and
prints the peak resident memory of the worker processes per step (timings.json),
then per phase: the largest memory a worker held when one of its tasks started
(what earlier tasks left behind) and the largest peak during a task, from the
per-task log the executor writes when LEMUR_TASK_MEMORY_LOG is set.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import yaml

from tests.runs import drop_orphan_stages

REPO = Path(__file__).resolve().parents[2]

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("email", "json", "http", "logging", "xml", "urllib", "asyncio", "unittest",
            "concurrent", "importlib", "multiprocessing", "sqlite3", "tomllib", "zoneinfo")


def make_corpus(root: Path, copies: int) -> int:
    size = 0
    for copy in range(copies):
        for package in PACKAGES:
            for source in sorted((STDLIB / package).rglob("*.py")):
                target = root / f"copy{copy}" / package / source.relative_to(STDLIB / package)
                target.parent.mkdir(parents=True, exist_ok=True)
                text = source.read_text()
                if copy:  # a real-looking edit so copies are not exact duplicates
                    text = f"# vendored copy {copy}\n" + text.replace("    ", "  " * (copy % 3 + 1))
                    text = text.replace("self", f"this{copy}")
                target.write_text(text)
                size += len(text.encode())
    return size


def run(manifest: dict, folder: Path) -> tuple[float, dict, dict]:
    """Seconds, peak worker memory per step (timings.json), and per phase: the largest
    (memory at task start, peak during the task) over its tasks (from the executor's
    per-task log)."""
    path = folder / "manifest.yaml"
    path.write_text(yaml.safe_dump(manifest))
    task_log = folder / "tasks.tsv"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lemur_data.pipeline.cli", "build", "--manifest",
                    str(path), "--run-dir", str(folder / "run"), "--progress", "none"],
                   cwd=REPO, check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "LEMUR_TASK_MEMORY_LOG": str(task_log)})
    timings = json.loads((folder / "run" / "timings.json").read_text())
    phases: dict[str, tuple[float, float]] = {}
    markers = folder / "run" / "markers"
    for line in task_log.read_text().splitlines() if task_log.exists() else []:
        marker, _pid, start_mb, peak_mb = line.split("\t")
        phase = str(Path(marker).parent.relative_to(markers))
        old = phases.get(phase, (0.0, 0.0))
        phases[phase] = (max(old[0], float(start_mb)), max(old[1], float(peak_mb)))
    return time.perf_counter() - start, timings["peak_worker_rss_mb"], phases


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--base", type=int, default=4,
                        help="copies in the 1x corpus: enough to fill whole shards, so that "
                             "growth shows the corpus, not half-empty shards")
    parser.add_argument("--manifest", default=str(REPO / "manifests" / "demo.yaml"))
    parser.add_argument("--scale-partitions", action="store_true",
                        help="grow the global stages' partitions with the input, as the README "
                             "advises for large corpora")
    parser.add_argument("--task-log", metavar="DIR",
                        help="keep each run's per-task memory log (tasks-<N>x.tsv: marker, "
                             "worker pid, MB at the task's start, peak MB) in DIR")
    args = parser.parse_args()
    base = yaml.safe_load(Path(args.manifest).read_text())
    work = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    rows = []
    for copies in (args.base, args.base * args.scale):
        folder = work / f"x{copies}"
        size = make_corpus(folder / "corpus", copies)
        manifest = drop_orphan_stages({
            **base, "name": f"memory-x{copies}",
            "sources": [{"name": "stdlib", "kind": "code",
                         "reader": {"type": "tree", "root": str(folder / "corpus"),
                                    "repo_depth": 1}}]})
        if args.scale_partitions:
            factor = copies // args.base
            manifest["stages"] = [
                {name: {**(params or {}), "partitions": 8 * factor}
                 if name in ("exact_dedup", "minhash") else params
                 for name, params in stage.items()} for stage in manifest["stages"]]
        manifest.pop("mixture", None)
        manifest.pop("train", None)
        seconds, peaks, phases = run(manifest, folder)
        rows.append((copies // args.base, size, seconds, peaks, phases))
        if args.task_log and (folder / "tasks.tsv").exists():
            Path(args.task_log).mkdir(parents=True, exist_ok=True)
            shutil.copy(folder / "tasks.tsv",
                        Path(args.task_log) / f"tasks-{copies // args.base}x.tsv")
        shutil.rmtree(folder)
    steps = list(rows[-1][3])
    print(f"{'input':>8} {'MB':>7} {'seconds':>8}  " + "  ".join(f"{s[:22]:>22}" for s in steps))
    for copies, size, seconds, peaks, _ in rows:
        print(f"{copies:>7}x {size / 1e6:>7.1f} {seconds:>8.1f}  "
              + "  ".join(f"{peaks.get(s, 0):>19.0f} MB" for s in steps))
    growth = max(rows[-1][3].values()) / max(max(rows[0][3].values()), 1)
    print(f"peak worker memory grew {growth:.2f}x for {args.scale}x the input")
    print("\nper phase, MB: largest memory at a task's start / largest peak during a task")
    print(f"{'phase':<52}" + "".join(f"{f'{r[0]}x start/peak':>20}" for r in rows)
          + f"{'peak growth':>13}")
    for phase in sorted({p for r in rows for p in r[4]}):
        cells = [r[4].get(phase, (0.0, 0.0)) for r in rows]
        print(f"{phase[:51]:<52}" + "".join(f"{c[0]:>11.0f} /{c[1]:>6.0f}" for c in cells)
              + f"{cells[-1][1] / max(cells[0][1], 1):>12.2f}x")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
