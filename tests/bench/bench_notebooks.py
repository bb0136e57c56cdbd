"""Throughput of the notebooks stage on real notebooks, one process (CPU seconds).

Run by hand (not collected by pytest):
    python -m tests.bench.bench_notebooks [--rounds 3]
The notebooks are the notebook fixtures of tests/fixtures/fetch.py (Debian doc packages,
nbconvert's and nbformat's test notebooks; fetched once into the fixture cache).
"""

from __future__ import annotations

import argparse
import time

from lemur_data.stages.base import ShardContext
from lemur_data.stages.notebooks import Notebooks, NotebooksParams
from lemur_data.stages.storage import documents_table
from tests.fixtures import real_notebooks


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts = [p.read_text(encoding="utf-8") for p in real_notebooks()]
    docs = documents_table([{"id": str(i), "text": t, "source": "s", "kind": "code",
                             "lang": "Jupyter Notebook"} for i, t in enumerate(texts)])
    megabytes = sum(len(t.encode()) for t in texts) / 1e6
    ctx = ShardContext("0", "", 0)
    for fmt in ("script", "structured"):
        stage = Notebooks(NotebooksParams(format=fmt))
        stage.apply(docs, ctx)  # imports and caches outside the timing
        started = time.process_time()
        for _ in range(args.rounds):
            stage.apply(docs, ctx)
        seconds = (time.process_time() - started) / args.rounds
        print(f"{fmt}: {megabytes / seconds:.1f} MB/s per core "
              f"({len(texts)} notebooks, {megabytes:.1f} MB)")


if __name__ == "__main__":
    main()
