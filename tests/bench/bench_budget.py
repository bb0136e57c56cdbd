"""`mixture.read: needed` against `read: all`: task CPU seconds for the same mixture.

    python -m tests.bench.bench_budget [--docs 18000] [--total 1.1e6] [--workers 2]
    python -m tests.bench.bench_budget --case stdlib     # issue 30's small mix

Input: the demo's sources (manifests/demo.yaml: the Python installation's code and
prose) plus `prose-big`, a jsonl of `--docs` documents of real English sentences
(help() topics, stdlib docstrings) in seeded draws, so none is a (near-)duplicate.
The mixture is Lemur's code:text 10:1 at `--total` tokens, so each component needs a
part of its sources: the text component a small part of prose-big (checked: prose-big
keeps at least 20x its share's need). (The demo's own weights single out
`code:Python`, which leaves `code` = non-Python code, nearly all in the C headers: a
component too small for its target, so every source that may hold such code is read
whole, as it must be, and the comparison would measure little.)
Shards are smaller than the demo's so each source has units to leave unread.

Runs both modes with the CLI (a fresh Ray each), read: needed first, and prints per
mode the task CPU seconds (timings.json `cpu_seconds`: CPU time measured in the
workers around each task, summed), wall time, rounds, the share read per source and
the mixture's worst share error; then the CPU ratio. The machine is shared: wall
times are noisy, the ratio within one run much less so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from tests.realdata import perturbed_prose, write_jsonl

REPO = Path(__file__).resolve().parents[2]


def manifest(prose: Path, read: str, total: float) -> dict[str, Any]:
    raw = yaml.safe_load((REPO / "manifests" / "demo.yaml").read_text())
    raw.pop("train", None)
    raw["name"] = f"budget-{read}"
    raw["shard"] = {"max_docs": 40, "max_bytes": "512KB"}
    # the demo's paths are relative to manifests/; this manifest is written elsewhere, so
    # its {manifest_dir} (the demo's notebooks) is spelled out
    for source in raw["sources"]:
        reader = source["reader"]
        if "{manifest_dir}" in str(reader.get("root", "")):
            reader["root"] = reader["root"].replace("{manifest_dir}", str(REPO / "manifests"))
    raw["sources"].append({"name": "prose-big", "kind": "text", "lang": "en",
                           "reader": {"type": "jsonl", "paths": [str(prose)]}})
    raw["mixture"] = {"total_tokens": total, "weights": {"code": 10, "text": 1}, "read": read,
                      "pilot_units": 2}
    raw["output"] = {"megatron": {"max_shard_bytes": "16MB", "blend": "separate"}}
    return raw


def stdlib_manifest(read: str, total: float, test_root: str = "{stdlib}/test") -> dict[str, Any]:
    """Issue 30's small mix: the standard library's email, json and asyncio (weight 4,
    under its target: read whole, repeated) and its test package (weight 1, about a
    tenth of its 9 units needed); the demo's document and global stages for code.
    `test_root`: where the test package is (Debian's python3 ships none: its
    libpython3.11-testsuite fixture holds one)."""
    raw = yaml.safe_load((REPO / "manifests" / "demo.yaml").read_text())
    stages = [s for s in raw["stages"] if next(iter(s)) not in ("notebooks", "repo_context")]
    skip = ["*/__pycache__/*", "*.pyc"]
    return {"name": f"budget-stdlib-{read}", "seed": raw["seed"],
            "shard": {"max_docs": 2000, "max_bytes": "2MB"},
            "sources": [
                {"name": "lib", "kind": "code", "reader": {
                    "type": "tree", "root": "{stdlib}", "subdirs": ["email", "json", "asyncio"],
                    "include": ["*.py"], "exclude": skip, "license": "PSF-2.0"}},
                {"name": "test", "kind": "code", "reader": {
                    "type": "tree", "root": test_root, "include": ["*.py"],
                    "exclude": skip, "license": "PSF-2.0"}}],
            "stages": stages,
            "mixture": {"total_tokens": total, "weights": {"lib": 4, "test": 1}, "read": read},
            "output": {"megatron": {"max_shard_bytes": "16MB", "blend": "separate"}}}


def build(raw: dict[str, Any], folder: Path, workers: int) -> tuple[float, dict, dict]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manifest.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lemur_data.pipeline.cli", "build", "--manifest",
                    str(path), "--run-dir", str(folder / "run"), "--progress", "none",
                    "--workers", str(workers)],
                   cwd=REPO, check=True, stdout=subprocess.DEVNULL,
                   env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"})
    seconds = time.perf_counter() - start
    stats = json.loads((folder / "run" / "stats.json").read_text())
    timings = json.loads((folder / "run" / "timings.json").read_text())
    return seconds, stats, timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=18000, help="documents in prose-big")
    parser.add_argument("--total", type=float, default=5.5e5, help="mixture total_tokens")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--case", choices=("lemur", "stdlib"), default="lemur",
                        help="lemur: the demo + prose-big at code:text 10:1 (--docs, --total); "
                             "stdlib: issue 30's small mix at --total 3e6")
    parser.add_argument("--keep", help="folder to keep the runs in (default: a temp dir)")
    args = parser.parse_args()
    base = Path(args.keep or tempfile.mkdtemp(prefix="bench-budget-"))
    base.mkdir(parents=True, exist_ok=True)
    prose = base / "prose-big.jsonl"
    if args.case == "lemur":
        write_jsonl(prose, [{"text": t} for t in perturbed_prose(args.docs, seed=23)])
        print(f"prose-big: {args.docs} documents, {prose.stat().st_size / 1e6:.1f} MB; "
              f"total_tokens {args.total:g}; {args.workers} workers; runs in {base}")
    else:
        args.total = 3e6 if args.total == 5.5e5 else args.total
        print(f"stdlib mix; total_tokens {args.total:g}; {args.workers} workers; runs in {base}")
    cpu: dict[str, float] = {}
    failures = []
    for read in ("needed", "all"):
        raw = (manifest(prose, read, args.total) if args.case == "lemur"
               else stdlib_manifest(read, args.total))
        seconds, stats, timings = build(raw, base / read, args.workers)
        cpu[read] = sum(timings["cpu_seconds"].values())
        mix = stats["mixture"]
        print(f"\nread: {read}: task CPU {cpu[read]:.1f} s, wall {seconds:.1f} s, input "
              f"{stats['input']['bytes'] / 1e6:.1f} MB, max share error "
              f"{mix['max_share_error']:.4%}")
        for c in mix["components"]:
            print(f"  {c['key']:<12} target {c['target_tokens']:>9,} available "
                  f"{c['available_tokens']:>10,} epochs {c['epochs']:.3f} "
                  f"share {c['realized_share']:.4f} (target {c['target_share']:.4f})")
        if mix["max_share_error"] >= 0.005:
            failures.append(f"{read}: share error {mix['max_share_error']:.4%}")
        read_stats = stats.get("read")
        if read_stats:
            print(f"  rounds {read_stats['rounds']}")
            for name, s in read_stats["sources"].items():
                print(f"  {name:<22} read {s['fraction_read']:>7.1%} ({s['units_read']}/"
                      f"{s['units']} units)  yield pilot {s['pilot_yield_tokens_per_byte']:.4f} "
                      f"realized {s['realized_yield_tokens_per_byte']:.4f} tokens/byte")
        print("  task CPU by step: " + ", ".join(
            f"{k} {v:.1f}" for k, v in sorted(timings["cpu_seconds"].items())))
        if read == "all" and args.case == "lemur":
            text = next(c for c in mix["components"] if c["key"] == "text")
            big = stats["profile"]["tokens_by_source"]["prose-big"]
            need = big / text["target_tokens"]
            print(f"  prose-big keeps {big:,} tokens: {need:.1f}x the text target")
            if need < 20:
                failures.append(f"prose-big is only {need:.1f}x its share's need")
    ratio = cpu["all"] / cpu["needed"] if cpu["needed"] else float("inf")
    print(f"\ntask CPU seconds: read: all {cpu['all']:.1f}, read: needed {cpu['needed']:.1f}: "
          f"{ratio:.1f}x fewer")
    least = 5 if args.case == "lemur" else 3
    if ratio < least:
        failures.append(f"CPU ratio {ratio:.1f} < {least}")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
