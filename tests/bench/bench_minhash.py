"""MinHash signature throughput: our vectorized numpy vs datasketch's MinHash.update_batch.

Run by hand (not collected by pytest):  python tests/bench/bench_minhash.py [MB]

Both sides sign the same real documents (standard-library .py files) with the same
shingles (5 code tokens) and 256 permutations, in this one process (one core).
datasketch gets its shingles ready-made as bytes (its tokenizing is not timed);
ours is timed end to end, from the text column to the signature matrix.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import time
from pathlib import Path

import pyarrow as pa
from datasketch import MinHash

from lemur_data.filters.shingles import batch_shingle_hashes, shingles
from lemur_data.stages.minhash_signatures import permutations, signatures

PERMS, NGRAM, SEED, ROUNDS = 256, 5, 1, 3


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
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
    texts = corpus(megabytes)
    column = pa.array(texts, pa.large_string())
    size = sum(len(t.encode()) for t in texts) / 1e6
    shingle_bytes = [[" ".join(s).encode() for s in shingles(t, "code", NGRAM)] for t in texts]
    count = sum(map(len, shingle_bytes))
    print(f"{len(texts)} documents, {size:.1f} MB, {count:,} shingles, {PERMS} permutations; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows = []
    hashes, offsets = batch_shingle_hashes(column, "code", NGRAM)
    for scheme in ("affine32", "legacy"):
        a, b = permutations(PERMS, SEED, scheme)

        def datasketch_all(s: str = scheme) -> None:
            for items in shingle_bytes:
                MinHash(num_perm=PERMS, seed=SEED, scheme=s).update_batch(items)

        # Interleaved rounds, best of each: the machine may be shared, and a burst of
        # load should not land on one side only.
        t_hash = t_perm = t_ds = float("inf")
        for _ in range(ROUNDS):
            t_hash = min(t_hash, timed(lambda: batch_shingle_hashes(column, "code", NGRAM)))
            t_perm = min(t_perm, timed(
                lambda a=a, b=b, s=scheme: signatures(hashes, offsets, a, b, s)))
            t_ds = min(t_ds, timed(datasketch_all))
        ours = t_hash + t_perm
        rows.append((scheme, size / ours, size / t_hash, size / t_perm, size / t_ds, t_ds / ours))
    print(f"{'scheme':10} {'ours MB/s':>10} {'(hash':>8} {'perm)':>8} {'datasketch':>11} "
          f"{'speedup':>8}")
    for scheme, ours, hashing, perm, ds, speedup in rows:
        print(f"{scheme:10} {ours:10.1f} {hashing:8.1f} {perm:8.1f} {ds:11.2f} {speedup:7.1f}x")
    print("MB/s per core: one process, numpy single-threaded; 'ours' = text to signatures, "
          "'datasketch' = update_batch on ready shingles.")


if __name__ == "__main__":
    main()
