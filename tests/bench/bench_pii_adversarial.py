"""CPU time of the PII filter (`find_pii`) on adversarial input: each form of
tests/pii_adversarial.py at two sizes, to see time per MB stay flat (linear).

Run by hand (not collected by pytest):
    python -m tests.bench.bench_pii_adversarial [--mb 1] [--only NAME ...]
Prints CPU s/MB at `mb` / 2 and at `mb`, their ratio (2.0 is linear), and `work` (the
characters handed to regexes, tests/test_pii_secrets.py bounds it) per input character.
"""

from __future__ import annotations

import argparse
import time

from lemur_data.filters.pii.find import find_pii
from tests import pii_adversarial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=1.0, help="the larger size, in MB")
    parser.add_argument("--only", nargs="*", default=None, help="forms to run")
    args = parser.parse_args()
    size = int(args.mb * 1_000_000)
    print(f"| form | s/MB at {args.mb / 2:g} MB | s/MB at {args.mb:g} MB | time ratio "
          f"(2.0 = linear) | work per character |")
    print("|---|---|---|---|---|")
    for name in pii_adversarial.UNITS:
        if args.only and name not in args.only:
            continue
        row = []
        for n in (size // 2, size):
            text = pii_adversarial.text(name, n)
            work: list[int] = []
            started = time.process_time()
            find_pii(text, work=work)
            row.append((time.process_time() - started, sum(work)))
        (small, _), (large, work_large) = row
        print(f"| {name} | {small / (size / 2e6):.2f} | {large / (size / 1e6):.2f} | "
              f"{large / max(small, 1e-6):.2f} | {work_large / size:.0f} |", flush=True)


if __name__ == "__main__":
    main()
