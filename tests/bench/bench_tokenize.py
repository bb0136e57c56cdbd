"""Tokenize-stage time against raw SentencePiece and the chosen encoder's raw encode.

Run by hand: `python -m tests.bench.bench_tokenize [MB]` (default 8 MB of the
standard library's Python source), one thread each, CPU time, best of 5 rounds run
alternately. Targets (issue 30): the stage (Arrow text in, Arrow id column out, EOS
added) >= 2.5x faster than raw `SentencePieceProcessor.encode` of the same texts,
and <= 1.15x the raw `encode_batch_flat` of fastokens, the encoder it uses.
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


def interleaved(*fns, rounds: int = 5) -> list[float]:
    """Best CPU time of each, run alternately so that load from elsewhere hits all alike."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, out in zip(fns, times, strict=True):
            start = time.process_time()
            fn()
            out.append(time.process_time() - start)
    return [min(t) for t in times]


def main() -> None:
    limit = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
    texts = documents(limit)
    mb = sum(len(t.encode()) for t in texts) / 2**20
    table = pa.table({"id": [str(i) for i in range(len(texts))],
                      "text": pa.array(texts, pa.large_string())})
    stage = Tokenize(TokenizeParams(tokenizer=TokenizerConfig(threads=1)))
    stage.setup()
    tokenizer = stage.tokenizer
    assert tokenizer is not None and tokenizer.fast is not None, tokenizer and tokenizer.note
    sentencepiece, fast = tokenizer.backend, tokenizer.fast
    ctx = ShardContext("bench", "/nonexistent", 0)
    tokens = int(sum(stage.apply(table, ctx).table.column("tokens").to_pylist()))
    t_spm, t_fast, t_stage = interleaved(
        lambda: sentencepiece.encode(texts, out_type=int, num_threads=1),
        lambda: fast.encode_batch_flat(texts, add_special_tokens=False,
                                       split_special_tokens=True),
        lambda: stage.apply(table, ctx))
    print(f"{len(texts)} documents, {mb:.1f} MB, {tokens:,} tokens "
          f"({tokenizer.name}, {tokenizer.engine}, 1 thread, CPU seconds)")
    print(f"{'what':<30}{'seconds':>9}{'MB/s':>8}{'Mtok/s':>8}{'vs spm':>8}{'vs raw':>8}")
    for name, seconds in (("raw sentencepiece encode", t_spm),
                          (f"raw {tokenizer.engine.split()[0]} encode_batch_flat", t_fast),
                          ("tokenize stage", t_stage)):
        print(f"{name:<30}{seconds:>9.3f}{mb / seconds:>8.2f}{tokens / seconds / 1e6:>8.2f}"
              f"{t_spm / seconds:>7.2f}x{seconds / t_fast:>7.2f}x")
    ok = t_spm / t_stage >= 2.5 and t_stage <= 1.15 * t_fast
    print(f"targets: stage >= 2.5x raw sentencepiece ({t_spm / t_stage:.2f}x), "
          f"<= 1.15x raw {tokenizer.engine.split()[0]} ({t_stage / t_fast:.2f}x) -> "
          f"{'OK' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
