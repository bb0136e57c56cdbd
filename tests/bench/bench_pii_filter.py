"""CPU throughput of the PII filter alone (`find_pii`) on real code.

Run by hand (not collected by pytest), once per checkout to compare two trees:
    python -m tests.bench.bench_pii_filter [--every 15]
Reads every N-th `.py` file of the running Python's standard library.
"""

from __future__ import annotations

import argparse
import sysconfig
import time
from pathlib import Path

from lemur_data.filters.pii import find_pii


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--every", type=int, default=15, help="read every N-th file")
    args = parser.parse_args()
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py"))[::args.every]
    texts = [f.read_text(errors="replace") for f in files]
    mb = sum(len(t.encode()) for t in texts) / 2**20
    start = time.process_time()
    for text in texts:
        find_pii(text)
    seconds = time.process_time() - start
    print(f"{len(texts)} files, {mb:.1f} MB, {seconds:.2f} CPU s, {mb / seconds:.1f} MB/s")


if __name__ == "__main__":
    main()
