"""Time the end-of-build documentation of a finished run: profile, plots, report, card.

The profile is read back from the run's shards here (`profile_output`); a build gets
the same figures from its last step's tasks and only merges them.

    python -m tests.bench.bench_report RUN_DIR [RUN_DIR ...]

Rewrites the run's plots/, report.html and README.md (same bytes: they are deterministic).
"first CPU s" is the CPU time of the first `write_run_docs` of the process, as a build
makes it: its imports prepared (`run_docs.prepare`, which a build runs while its tasks
do) and the collector settled (pipeline/heap.py); "plots s" and "docs s" are the wall
times of later calls.
"""

from __future__ import annotations

import gc
import resource
import sys
import time

from lemur_data.pipeline.profile import profile_output
from lemur_data.pipeline.publish.plots import make_plots
from lemur_data.pipeline.publish.run_docs import prepare, write_run_docs
from lemur_data.stages import storage


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(runs: list[str]) -> None:
    prepare()
    print(f"{'run':<40} {'shards':>6} {'docs':>9} {'MB':>8} {'profile s':>9} {'MB/s':>7} "
          f"{'first CPU s':>11} {'plots s':>7} {'docs s':>7}")
    first = None
    for run in runs:
        stats = storage.read_json(storage.join(run, "stats.json"))
        paths = [storage.join(run, stats["output"]["dir"], n) for n in stats["output"]["shards"]]
        start = time.perf_counter()
        stats["profile"] = profile_output(paths)
        profiled = time.perf_counter() - start
        if first is None:  # as a build: what exists is frozen out of later collections
            gc.freeze()
            cpu = _cpu()
            write_run_docs(run, stats)
            first = _cpu() - cpu
        start = time.perf_counter()
        make_plots(stats)
        plotted = time.perf_counter() - start
        start = time.perf_counter()
        write_run_docs(run, stats)
        written = time.perf_counter() - start
        mb = stats["output"]["bytes"] / 1e6
        print(f"{run[-40:]:<40} {len(paths):>6} {stats['output']['docs']:>9,} {mb:>8,.1f} "
              f"{profiled:>9.2f} {mb / profiled:>7.0f} {first:>11.2f} {plotted:>7.2f} "
              f"{written:>7.2f}")
        first = float("nan")  # the first run's only


if __name__ == "__main__":
    main(sys.argv[1:])
