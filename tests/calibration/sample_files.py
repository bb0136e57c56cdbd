"""Sample the calibration files per language and write `files/<Language>.txt`.

Deterministic: candidates are sorted, then sampled with a fixed seed, so the
same fixtures (tests/fixtures/fetch.py) give the same lists on any machine.
Rerun after changing ROOTS in corpus.py or a fixture's version:
    python tests/fixtures/fetch.py && python -m tests.calibration.sample_files
"""

from __future__ import annotations

import argparse
import random

from tests.calibration.corpus import LANGUAGES, LISTS, ROOTS, candidates, list_path

SEED = 20261130


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-language", type=int, default=300)
    args = parser.parse_args()
    LISTS.mkdir(exist_ok=True)
    for language in LANGUAGES:
        pool: list[str] = []
        for root in ROOTS:
            if root.language == language:
                pool.extend(entry for entry in candidates(root) if entry not in pool)
        pool = sorted(set(pool))
        chosen = sorted(random.Random(f"{SEED}:{language}").sample(
            pool, min(args.per_language, len(pool))))
        header = (f"# {language}: {len(chosen)} of {len(pool)} candidate files "
                  f"(tests/calibration/sample_files.py, seed {SEED})\n")
        list_path(language).write_text(header + "".join(f"{e}\n" for e in chosen))
        print(f"{language:12s} {len(chosen):4d} of {len(pool):6d}")


if __name__ == "__main__":
    main()
