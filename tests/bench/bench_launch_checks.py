"""How long the launch's data checks take on indexes the size of the 90B-token corpus.

    python -m tests.bench.bench_launch_checks [--sequences 1e6 1e7 3e7]

Writes one dataset per size (document lengths drawn from the token counts of real stdlib
files, tokenized with the offline default tokenizer; the `.bin` is a sparse file of the
right size), then times lemur-data's own index reader and megatron-core's IndexedDataset.
A 90B-token run of ~1k-token documents has ~9e7 sequences over its shards.
"""

from __future__ import annotations

import argparse
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

from lemur_data.pipeline.launch.checks import check_indexed_datasets, read_index
from lemur_data.stages.mix.indexed_dataset import index_bytes
from lemur_data.stages.tokenize.tokenizer import TokenizerConfig, load_tokenizer


def real_lengths(limit: int = 2000) -> np.ndarray:
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py"))[:limit]
    tokenizer = load_tokenizer(TokenizerConfig())
    texts = [f.read_text(errors="replace") for f in files]
    return np.array([len(ids) + 1 for ids in tokenizer.encode_batch(texts)], np.int64)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sequences", type=float, nargs="+", default=[1e6, 1e7])
    args = parser.parse_args()
    pool = real_lengths()
    check_indexed_datasets([])  # import megatron-core (seconds) outside the timings
    print(f"{'sequences':>12} {'tokens':>16} {'idx MB':>8} {'read_index s':>13} "
          f"{'IndexedDataset s':>17}")
    with tempfile.TemporaryDirectory() as folder:
        for count in map(int, args.sequences):
            lengths = pool[np.arange(count) % len(pool)]
            prefix = f"{folder}/bench_{count}"
            Path(prefix + ".idx").write_bytes(index_bytes(np.dtype(np.uint16), lengths))
            with open(prefix + ".bin", "wb") as handle:  # sparse: only its size matters
                handle.truncate(int(lengths.sum()) * 2)
            start = time.perf_counter()
            _, tokens = read_index(prefix)
            ours = time.perf_counter() - start
            start = time.perf_counter()
            check = check_indexed_datasets([prefix])
            theirs = time.perf_counter() - start
            size = Path(prefix + ".idx").stat().st_size / 1e6
            print(f"{count:>12,} {tokens:>16,} {size:>8.0f} {ours:>13.2f} "
                  f"{theirs:>17.2f}  ({check.status})")


if __name__ == "__main__":
    main()
