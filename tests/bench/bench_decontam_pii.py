"""Throughput and false-positive figures of `decontaminate` and `pii` on the Python install.

Run by hand (not collected by pytest):
    python -m tests.bench.bench_decontam_pii [--every N]
Reads every N-th file (default 1: all) of the stdlib, site-packages and the pydoc topics;
nothing is planted, so every decontamination hit is a false positive, and every PII hit
is shown per rule for inspection (real author emails are true positives).
"""

from __future__ import annotations

import argparse
import sysconfig
import time
from collections import Counter
from pathlib import Path

from lemur_data.filters.decontaminate import BenchmarkMatcher, short_keys
from lemur_data.filters.pii.find import find_pii
from lemur_data.stages.decontaminate.background import common_snippets, default_roots
from lemur_data.stages.decontaminate.benchmarks import BENCHMARKS, load_benchmark, package_file

DATA = Path(__file__).resolve().parents[1] / "data" / "benchmarks"  # real MBPP, GSM8K samples

SUFFIXES = {".py", ".pyi", ".pyx", ".c", ".h", ".js", ".ts", ".html", ".json", ".toml",
            ".txt", ".rst", ".md", ".cfg", ".yaml", ".yml", ".sh"}


def corpus(every: int) -> list[tuple[str, str]]:
    paths = sysconfig.get_paths()
    files = sorted(p for root in {paths["stdlib"], paths["purelib"]}
                   for p in Path(root).rglob("*") if p.suffix in SUFFIXES and p.is_file())
    docs = [(str(f), f.read_text(errors="replace")) for f in files[::every]]
    from pydoc_data.topics import topics
    return docs + [(f"pydoc:{k}", topics[k]) for k in sorted(topics)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--every", type=int, default=1)
    args = parser.parse_args()
    docs = corpus(args.every)
    megabytes = sum(len(t.encode()) for _, t in docs) / 1e6
    print(f"corpus: {len(docs)} documents, {megabytes:.1f} MB")

    started = time.perf_counter()
    parts, loaded = [], []
    for name in ("humaneval", "mmlu"):
        if package_file(BENCHMARKS[name]) is not None:
            parts += load_benchmark(name, hub=False)[0]
            loaded.append(name)
    parts += load_benchmark("mbpp", str(DATA / "mbpp_sanitized_sample.jsonl"), hub=False)[0]
    parts += load_benchmark("gsm8k", str(DATA / "gsm8k_test_sample.jsonl"), hub=False)[0]
    loaded += ["mbpp-sample", "gsm8k-sample"]
    # short code is searched when the stdlib lacks it, as the stage does by default
    matcher = BenchmarkMatcher(parts, common=common_snippets(short_keys(parts, 50, 20),
                                                             default_roots()))
    built = time.perf_counter() - started
    started = time.perf_counter()
    hits = [(path, m.label) for path, text in docs if (m := matcher.find(text))]
    seconds = time.perf_counter() - started
    print(f"\ndecontaminate ({'+'.join(loaded)}, {len(parts)} parts; index {built:.1f} s)")
    print(f"  {megabytes / seconds:6.1f} MB/s on one core, {len(docs) / seconds:7.0f} docs/s")
    print(f"  false positives: {len(hits)} of {len(docs)} ({len(hits) / len(docs):.4%})")
    for path, label in hits[:20]:
        print(f"    {path}: {label}")

    started = time.perf_counter()
    rules: Counter[str] = Counter()
    touched: Counter[str] = Counter()
    for _path, text in docs:
        spans = find_pii(text)
        rules.update(s.rule for s in spans)
        touched.update({s.kind for s in spans})
    seconds = time.perf_counter() - started
    print("\npii")
    print(f"  {megabytes / seconds:6.1f} MB/s on one core")
    print(f"  {'rule':<22}{'spans':>8}")
    for rule, count in sorted(rules.items()):
        print(f"  {rule:<22}{count:>8}")
    print(f"  documents touched per kind: {dict(sorted(touched.items()))}")


if __name__ == "__main__":
    main()
