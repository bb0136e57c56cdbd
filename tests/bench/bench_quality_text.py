"""The quality stage on text, per preset, in MB/s per core: what `plan` charges it.

Run by hand (not collected by pytest):

    python -m tests.bench.bench_quality_text [--text-mb 3] [--rounds 3]

The stage's `apply` (word metrics, then the preset's datatrove filters, first failing
rule wins) on real English: help() topics, package READMEs and English man pages
(`bench_filters.text_corpus`). Each preset runs in a fresh process per round, as a Ray
worker meets its first text shard (the word splitter's memo empty); CPU time of that
process's `apply` (time.process_time), so the figure is per core. Prints the median
of the rounds and how many documents each preset keeps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

PRESETS = ("refinedweb", "gopher", "fineweb", "c4")


def one(preset: str, text_mb: float) -> dict[str, float]:
    """In this process: the stage's apply on the corpus, timed."""
    from lemur_data.stages.base import ShardContext
    from lemur_data.stages.quality.stage import Quality, QualityParams
    from lemur_data.stages.storage import documents_table
    from tests.bench.bench_filters import size_mb, text_corpus

    texts = text_corpus(text_mb)
    table = documents_table([{"id": str(i), "text": t, "source": "web", "kind": "text",
                              "lang": "en"} for i, t in enumerate(texts)])
    stage = Quality(QualityParams.model_validate({"text": {"preset": preset}}))
    stage.setup()
    ctx = ShardContext("bench", "/tmp", 0)
    # the rules are built at the first text document: not part of the per-MB rate
    stage.apply(documents_table([{"id": "w", "text": "Words to build the rules with. " * 9,
                                  "source": "web", "kind": "text", "lang": "en"}]), ctx)
    start = time.process_time()
    result = stage.apply(table, ctx)
    seconds = time.process_time() - start
    kept = sum(reason is None for reason in result.reasons.to_pylist())
    return {"mb": size_mb(texts), "seconds": seconds, "docs": len(texts), "kept": kept}


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2], float(sys.argv[3]))))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--text-mb", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {p: [] for p in PRESETS}
    for _ in range(args.rounds):  # interleaved: load from elsewhere hits every preset
        for preset in PRESETS:
            out = subprocess.run([sys.executable, "-m", "tests.bench.bench_quality_text",
                                  "--one", preset, str(args.text_mb)],
                                 capture_output=True, text=True, check=True).stdout
            runs[preset].append(json.loads(out.splitlines()[-1]))
    print(f"{'preset':12} {'MB':>6} {'docs':>6} {'kept':>6} {'CPU s (median)':>15} "
          f"{'MB/s per core':>14}")
    for preset, results in runs.items():
        seconds = statistics.median(r["seconds"] for r in results)
        first = results[0]
        print(f"{preset:12} {first['mb']:6.2f} {first['docs']:6.0f} {first['kept']:6.0f} "
              f"{seconds:15.3f} {first['mb'] / seconds:14.2f}")


if __name__ == "__main__":
    main()
