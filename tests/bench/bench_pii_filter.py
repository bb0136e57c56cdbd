"""CPU throughput of the PII filter alone (`find_pii`) on real code, and of the stage.

Run by hand (not collected by pytest), once per checkout to compare two trees:
    python -m tests.bench.bench_pii_filter [--every 15] [--stage]
Reads every N-th `.py` file of the running Python's standard library. `--stage` also times
the pii stage's `apply` on the same files as documents with `path`, `repo`, `url` and
`license` columns (every published string column is redacted), best of 4 rounds.
"""

from __future__ import annotations

import argparse
import sysconfig
import time
from pathlib import Path

import pyarrow as pa

from lemur_data.filters.pii.find import find_pii
from lemur_data.stages.base import ShardContext
from lemur_data.stages.pii import Pii, PiiParams
from lemur_data.stages.storage import DOCUMENT_SCHEMA


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--every", type=int, default=15, help="read every N-th file")
    parser.add_argument("--stage", action="store_true", help="time the stage's apply too")
    args = parser.parse_args()
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(root.rglob("*.py"))[::args.every]
    texts = [f.read_text(errors="replace") for f in files]
    mb = sum(len(t.encode()) for t in texts) / 2**20
    start = time.process_time()
    for text in texts:
        find_pii(text)
    seconds = time.process_time() - start
    print(f"{len(texts)} files, {mb:.1f} MB, {seconds:.2f} CPU s, {mb / seconds:.1f} MB/s")
    if not args.stage:
        return
    rows = [{"id": str(i), "text": text, "source": "stdlib", "kind": "code", "lang": "Python",
             "path": str(f.relative_to(root)), "repo": "python/cpython", "license": "PSF-2.0",
             "stars": 1, "url": f"https://github.com/python/cpython/blob/main/Lib/"
                                f"{f.relative_to(root)}"}
            for i, (f, text) in enumerate(zip(files, texts, strict=True))]
    table = pa.Table.from_pylist(rows, schema=DOCUMENT_SCHEMA)
    stage = Pii(PiiParams())
    rounds = []
    for _ in range(4):
        start = time.process_time()
        stage.apply(table, ShardContext("0", "", 0))
        rounds.append(time.process_time() - start)
    print(f"stage apply (text, path, repo, url, license): {min(rounds):.2f} CPU s, "
          f"{mb / min(rounds):.1f} MB/s of text")


if __name__ == "__main__":
    main()
