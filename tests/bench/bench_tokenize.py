"""Tokenize-stage time against the raw tokenizer's batch encode of the same documents.

Run by hand: `python -m tests.bench.bench_tokenize [MB]` (default 8 MB of the
standard library's Python source). Target: the stage within 1.25x of the raw
encode (the stage adds EOS, builds the Arrow list column and the counts).
"""

from __future__ import annotations

import sys
import sysconfig
import time
from pathlib import Path

import pyarrow as pa

from lemur_data.stages.base import ShardContext
from lemur_data.stages.tokenize.stage import Tokenize, TokenizeParams
from lemur_data.stages.tokenize.tokenizer import TokenizerConfig


def documents(limit_mb: float) -> list[str]:
    texts, size = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        texts.append(text)
        size += len(text.encode())
        if size >= limit_mb * 2**20:
            break
    return texts


def interleaved(first, second, rounds: int = 5) -> tuple[float, float]:
    """Best time of each, run alternately so that load from elsewhere hits both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for fn, out in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return min(times[0]), min(times[1])


def main() -> None:
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
    texts = documents(limit)
    mb = sum(len(t.encode()) for t in texts) / 2**20
    table = pa.table({"id": [str(i) for i in range(len(texts))],
                      "text": pa.array(texts, pa.large_string())})
    stage = Tokenize(TokenizeParams(tokenizer=TokenizerConfig(threads=1)))
    stage.setup()
    assert stage.tokenizer is not None
    raw = stage.tokenizer.backend
    ctx = ShardContext("bench", "/nonexistent", 0)
    tokens = int(sum(stage.apply(table, ctx).table.column("tokens").to_pylist()))
    t_raw, t_stage = interleaved(lambda: raw.encode(texts, out_type=int, num_threads=1),
                                 lambda: stage.apply(table, ctx))
    print(f"{len(texts)} documents, {mb:.1f} MB, {tokens:,} tokens "
          f"({stage.tokenizer.name}, 1 thread)")
    print(f"{'what':<28}{'seconds':>10}{'MB/s':>8}{'Mtok/s':>8}{'ratio':>8}")
    for name, seconds in (("raw sentencepiece encode", t_raw), ("tokenize stage", t_stage)):
        print(f"{name:<28}{seconds:>10.3f}{mb / seconds:>8.2f}{tokens / seconds / 1e6:>8.2f}"
              f"{seconds / t_raw:>8.3f}")
    verdict = "OK" if t_stage <= 1.25 * t_raw else "SLOWER THAN TARGET"
    print(f"target: stage <= 1.25x raw -> {verdict}")


if __name__ == "__main__":
    main()
