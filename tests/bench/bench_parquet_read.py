"""Parquet reader when row groups are larger than a shard (Hub parquet, The Stack).

Writes the stdlib's .py files (repeated `--copies` times) as one parquet file with a
single row group, plans units of `--max-docs` rows, and reads one unit in a fresh
process per variant: `whole-group` (what the reader did before: read_row_groups, then
slice) and the reader's `batches` (iter_batches of `batch_rows`, stopping at the unit's
last row). Prints peak pyarrow pool memory, peak RSS (VmHWM) and seconds, for the first, middle
and last unit.

    python -m tests.bench.bench_parquet_read [--copies 3] [--max-docs 500]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def write_file(path: Path, copies: int) -> int:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    texts = [f.read_text(errors="replace") for f in files] * copies
    table = pa.table({"content": texts, "max_stars_repo_path": [str(i) for i in range(len(texts))]})
    pq.write_table(table, path, row_group_size=len(texts))
    return len(texts)


def child(variant: str, path: str, start: int, count: int, batch_rows: int) -> None:
    from lemur_data.stages.readers.common import SourceInfo
    from lemur_data.stages.readers.parquet import ParquetParams, ParquetReader

    began = time.perf_counter()
    if variant == "whole-group":
        table = pq.ParquetFile(path).read_row_groups([0], columns=["content"]).slice(start, count)
    else:
        reader = ParquetReader(ParquetParams(type="parquet", paths=[path], batch_rows=batch_rows),
                               SourceInfo("s", "code", {"text": "content"}))
        table = reader._read_rows(path, start, count)
    seconds = time.perf_counter() - began
    assert table.num_rows == count
    status = Path("/proc/self/status").read_text()  # VmHWM: this process's own peak
    peak_kb = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
    print(json.dumps({"pool_mb": pa.default_memory_pool().max_memory() / 2**20,
                      "rss_mb": peak_kb / 1024, "seconds": seconds}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--max-docs", type=int, default=500)
    parser.add_argument("--batch-rows", type=int, default=256)
    parser.add_argument("--child", nargs=5)
    args = parser.parse_args()
    if args.child:
        variant, path, start, count, batch_rows = args.child
        child(variant, path, int(start), int(count), int(batch_rows))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "one-group.parquet"
        rows = write_file(path, args.copies)
        size = path.stat().st_size / 2**20
        print(f"{rows} rows in one row group, {size:.0f} MB on disk; units of {args.max_docs} "
              f"rows; batch_rows {args.batch_rows}")
        print(f"{'unit start':>10} {'variant':>12} {'pool MB':>8} {'RSS MB':>7} {'seconds':>8}")
        for start in (0, (rows // 2 // args.max_docs) * args.max_docs,
                      (rows - 1) // args.max_docs * args.max_docs):
            count = min(args.max_docs, rows - start)
            for variant in ("whole-group", "batches"):
                out = subprocess.run([sys.executable, "-m", "tests.bench.bench_parquet_read",
                                      "--child", variant, str(path),
                                      str(start), str(count), str(args.batch_rows)],
                                     check=True, capture_output=True, text=True).stdout
                got = json.loads(out)
                print(f"{start:>10} {variant:>12} {got['pool_mb']:>8.0f} {got['rss_mb']:>7.0f} "
                      f"{got['seconds']:>8.2f}")


if __name__ == "__main__":
    main()
