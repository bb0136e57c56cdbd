"""MinHash signature throughput: ours (numba kernels; numpy fallback) vs datasketch's
MinHash.update_batch.

Run by hand (not collected by pytest):  python -m tests.bench.bench_minhash [MB] [rounds]

What is timed, on the same real documents (standard-library .py files), the same
shingles (5 code tokens), 256 permutations and seed, in this one process (one core):
- ours: end to end from the Arrow text column to the (documents x 256) signature
  matrix: tokenizing, shingling and hashing the shingles (batch_shingle_hashes), then
  the permutations and per-document minima (signatures). Split as (hash, perm).
- datasketch: `template.copy().update_batch(shingles)` per document, as our
  `backend: datasketch` runs it; update_batch hashes each shingle (SHA-1) and
  applies the permutations. Its shingles are handed over ready-made as bytes: the
  Python tokenizing that produces them is NOT timed (in datasketch's favour).
Times are CPU seconds of this process (time.process_time). Rounds alternate ours /
datasketch so a burst of load on a shared machine hits both; the table gives the
median of the rounds (speedup = median of per-round ratios).
"""

from __future__ import annotations

import os
import statistics
import sys
import sysconfig
import time
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
from datasketch import MinHash

from lemur_data.filters.minhash.shingles import batch_shingle_hashes, shingles
from lemur_data.stages.minhash.hashing import permutations, signatures

PERMS, NGRAM, SEED = 256, 5, 1


def corpus(megabytes: float) -> list[str]:
    texts, size = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        texts.append(text)
        size += len(text.encode())
        if size >= megabytes * 1e6:
            break
    return texts


def timed(fn) -> float:
    # CPU seconds of this process (all work here is single-threaded): per-core throughput,
    # and less skewed than wall time when other jobs preempt us on a shared machine.
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    texts = corpus(megabytes)
    column = pa.array(texts, pa.large_string())
    size = sum(len(t.encode()) for t in texts) / 1e6
    shingle_bytes = [[" ".join(s).encode() for s in shingles(t, "code", NGRAM)] for t in texts]
    count = sum(map(len, shingle_bytes))
    print(f"{len(texts)} documents, {size:.1f} MB, {count:,} shingles, {PERMS} permutations, "
          f"{rounds} interleaved rounds; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    rows = []
    for scheme in ("affine32", "legacy"):
        a, b = permutations(PERMS, SEED, scheme)
        template = MinHash(num_perm=PERMS, seed=SEED, scheme=scheme)

        def datasketch_all(template: MinHash = template) -> None:
            for items in shingle_bytes:
                template.copy().update_batch(items)

        for compiled in (True, False):
            hashes, offsets = batch_shingle_hashes(column, "code", NGRAM, compiled=compiled)
            # Warm-up (numba compiles or loads its cache) and a check that both paths agree.
            assert np.array_equal(signatures(hashes, offsets, a, b, scheme, compiled=compiled),
                                  signatures(hashes, offsets, a, b, scheme, compiled=False))
            t_hash, t_perm, t_ds, ratio = [], [], [], []
            for _ in range(rounds):
                t_hash.append(timed(partial(batch_shingle_hashes, column, "code", NGRAM,
                                            compiled=compiled)))
                t_perm.append(timed(partial(signatures, hashes, offsets, a, b, scheme,
                                            compiled=compiled)))
                t_ds.append(timed(datasketch_all))
                ratio.append(t_ds[-1] / (t_hash[-1] + t_perm[-1]))
            ours = statistics.median(h + p for h, p in zip(t_hash, t_perm, strict=True))
            rows.append((scheme, "numba" if compiled else "numpy", size / ours,
                         size / statistics.median(t_hash), size / statistics.median(t_perm),
                         size / statistics.median(t_ds), statistics.median(ratio),
                         min(ratio), max(ratio)))
    print(f"{'scheme':9} {'ours':6} {'MB/s':>7} {'(hash':>8} {'perm)':>8} {'datasketch':>11} "
          f"{'speedup':>8} {'(min-max)':>12}")
    for scheme, path, ours, hashing, perm, ds, speedup, low, high in rows:
        print(f"{scheme:9} {path:6} {ours:7.1f} {hashing:8.1f} {perm:8.1f} {ds:11.2f} "
              f"{speedup:7.1f}x {low:5.1f}-{high:.1f}x")
    print("MB/s per core (CPU time, single-threaded), medians over rounds. ours: text -> "
          "signatures; datasketch: update_batch on ready-made shingles (tokenizing not timed).")


if __name__ == "__main__":
    main()
