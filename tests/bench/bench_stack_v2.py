"""The Stack v2 reader's blob fetches over loopback: blobs/s and MB/s at 1, 8 and 32
concurrent fetches, against moto_server (a real S3-compatible server process on
127.0.0.1) holding real standard-library files gzip'd as Software Heritage stores them.

Every concurrency level fetches and decodes the same blobs in the same process run
(`StackV2Reader.read` of one unit: fetch, gunzip, decode), so the ratios between the
levels hold even on a noisy machine; the absolute numbers are loopback against a Python
server, not S3.

    python -m tests.bench.bench_stack_v2 [--blobs 600] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sysconfig
import tempfile
import time
from pathlib import Path

from lemur_data.stages.ingest import plan_units, read_unit
from lemur_data.stages.readers.common import SourceInfo
from lemur_data.stages.readers.stack_v2 import StackV2Params
from tests.s3server import TEST_CREDENTIALS, s3_server
from tests.stack_v2_data import StackV2Row, upload_blobs, write_metadata


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blobs", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    os.environ.update(TEST_CREDENTIALS)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    rows = [StackV2Row(f.read_text(errors="replace"), str(f.relative_to(stdlib)), "python/cpython")
            for f in files[: args.blobs]]
    text_mb = sum(len(r.raw) for r in rows) / 1e6
    with tempfile.TemporaryDirectory() as tmp, s3_server(Path(tmp) / "moto.log") as server:
        upload_blobs(server.client(), rows)
        write_metadata(Path(tmp) / "data/Python/train-00000-of-00001.parquet", rows, "Python",
                       row_group_size=len(rows))
        source = SourceInfo("stack-v2-python", "code")
        print(f"{len(rows)} blobs, {text_mb:.1f} MB of text; {args.rounds} rounds each")
        print("| concurrent fetches | blobs/s | MB/s (text) | seconds |")
        print("|---|---|---|---|")
        for concurrency in (1, 8, 32):
            params = StackV2Params.model_validate({
                "type": "stack_v2", "paths": [f"{tmp}/data/Python/*.parquet"],
                "endpoint_url": server.endpoint, "concurrency": concurrency})
            (unit,) = plan_units(params, source, len(rows), 2**40)
            best = float("inf")
            for _ in range(args.rounds):
                start = time.perf_counter()
                table = read_unit(params, source, unit)
                best = min(best, time.perf_counter() - start)
                reasons = set(table.column("reason").to_pylist())
                assert table.num_rows == len(rows) and reasons <= {None, "empty"}, reasons
            print(f"| {concurrency} | {len(rows) / best:,.0f} | {text_mb / best:,.1f} | "
                  f"{best:.2f} |")


if __name__ == "__main__":
    main()
