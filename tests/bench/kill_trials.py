"""Kill the driver with SIGKILL at random points, resume, and compare with a clean run.

    python -m tests.bench.kill_trials [--manifest manifests/demo.yaml] [--trials 5] [--seed 0]

Each trial starts `lemur-data build`, SIGKILLs it after a random delay within the
clean run's duration, reruns the same command to resume, and checks that every
output file is byte-identical to the clean run's. Every run uses the same run
folder path (Megatron's data_args.txt and train.sh hold absolute paths into it).
Prints one line per trial.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "lemur_data.pipeline.cli", "build", "--progress", "none"]


def digest(run_dir: Path) -> dict[str, str]:
    return {str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file() and p.name != "timings.json"}


def build(manifest: str, run_dir: Path) -> float:
    start = time.perf_counter()
    subprocess.run([*CLI, "--manifest", manifest, "--run-dir", str(run_dir)], cwd=REPO,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", default="manifests/demo.yaml")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="kill-trials-"))
    run_dir = work / "run"
    clean_seconds = build(args.manifest, run_dir)
    expected = digest(run_dir)
    shutil.rmtree(run_dir)
    print(f"clean run: {clean_seconds:.1f} s, {len(expected)} files")
    print(f"{'trial':>5} {'kill at s':>9} {'tasks done':>10} {'resume s':>8}  identical")
    failures = 0
    for trial in range(1, args.trials + 1):
        delay = rng.uniform(0.15, 0.9) * clean_seconds
        process = subprocess.Popen([*CLI, "--manifest", args.manifest, "--run-dir", str(run_dir)],
                                   cwd=REPO, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        done = len(list((run_dir / "markers").rglob("*.json")))
        resume = build(args.manifest, run_dir)
        same = digest(run_dir) == expected
        failures += not same
        print(f"{trial:>5} {delay:>9.1f} {done:>10} {resume:>8.1f}  {'yes' if same else 'NO'}")
        shutil.rmtree(run_dir)
    shutil.rmtree(work)
    print(f"{args.trials - failures}/{args.trials} trials byte-identical after resume")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
