"""Throughput of the langid and quality filters, in MB/s per core, against datatrove's own.

Run by hand (not collected by pytest):

    python -m tests.bench.bench_filters [--code-mb 40] [--text-mb 4]

CPU time of this process is what is measured (time.process_time), so the figures are
per core and hold on a busy machine. Inputs are real: the standard library and
site-packages for code; help() topics, package READMEs and English man pages for text;
the translated man pages for language ID. References:
- langid: datatrove's LanguageFilter(languages=["en"]) with the same lid.176.ftz model;
- code quality: our pure-Python per-file path (`check_one`, what bigcode's scripts do);
- text quality: datatrove's Gopher repetition + quality, C4, FineWeb filters with their
  own (spaCy) English word splitter, against the same filters given our regex splitter.
"""

from __future__ import annotations

import argparse
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from lemur_data.filters.langid.text import FastTextLanguageID, default_model_path
from lemur_data.filters.quality import code_rules
from lemur_data.filters.quality.text_rules import RegexWordTokenizer, build_rule
from tests.test_langid import MAN_LANGUAGES, man_paragraphs

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PURELIB = Path(sysconfig.get_paths()["purelib"])
CODE_SUFFIXES = {".py", ".js", ".json", ".html", ".css", ".yaml", ".c", ".h"}


def code_corpus(limit_mb: float) -> list[str]:
    return [text for _, text in code_files(limit_mb)]


def code_files(limit_mb: float) -> list[tuple[str, str]]:
    """(path relative to its root, text) of the code corpus."""
    texts, total = [], 0
    for root in (STDLIB, PURELIB):
        for path in sorted(root.rglob("*")):
            if path.suffix in CODE_SUFFIXES and path.is_file() and "site-packages" not in (
                    path.relative_to(root).parts[:1] if root == STDLIB else ()):
                try:
                    text = path.read_text()
                except (UnicodeDecodeError, OSError):
                    continue
                texts.append((str(path.relative_to(root)), text))
                total += len(text.encode())
                if total >= limit_mb * 1e6:
                    return texts
    return texts


def text_corpus(limit_mb: float) -> list[str]:
    from pydoc_data.topics import topics

    docs = [topics[k] for k in sorted(topics)]
    docs += [p.read_text(errors="replace") for p in sorted(PURELIB.glob("*.dist-info/METADATA"))]
    paragraphs = man_paragraphs("", limit=3000, per_page=10)
    docs += ["\n\n".join(paragraphs[i:i + 8]) for i in range(0, len(paragraphs), 8)]
    out, total = [], 0
    for doc in docs:
        out.append(doc)
        total += len(doc.encode())
        if total >= limit_mb * 1e6:
            break
    return out


def multilingual_corpus() -> list[str]:
    return [p for folder in sorted(MAN_LANGUAGES) for p in man_paragraphs(folder, limit=300)]


def cpu(fn: Callable[[], object], repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def size_mb(texts: list[str]) -> float:
    return sum(len(t.encode()) for t in texts) / 1e6


def bench_langid(texts: list[str]) -> tuple[float, float]:
    from datatrove.data import Document
    from datatrove.pipeline.filters import LanguageFilter
    from fasttext.FastText import _FastText

    ours = FastTextLanguageID()
    ours.model  # noqa: B018 - load outside the timing
    theirs = LanguageFilter(languages=["en"], language_threshold=0.65)
    theirs.model._model = _FastText(default_model_path())  # same model, no download
    docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
    return (cpu(lambda: ours.predict(texts), 3),
            cpu(lambda: [theirs.filter(d) for d in docs], 3))


def bench_code_langid(files: list[tuple[str, str]]) -> tuple[float, float]:
    """The langid stage on code without a language column (go-enry on every file),
    against the hand-written table it replaced (tests/calibration/stack_table.py) on the
    same head and tail."""
    from lemur_data.stages.base import ShardContext
    from lemur_data.stages.langid import LangId, LangIdParams
    from lemur_data.stages.storage import documents_table
    from tests.calibration.stack_table import detect_code_language as table

    docs = documents_table([{"id": str(i), "text": t, "source": "s", "kind": "code",
                             "lang": None, "path": p} for i, (p, t) in enumerate(files)])
    stage = LangId(LangIdParams.model_validate({"text": None, "code": {"keep": None}}))
    ctx = ShardContext("bench", "/tmp", 0)

    def by_table() -> None:
        for path, text in files:
            table(path, text[:4096].encode("utf-8", "replace"),
                  text[-2048:].encode("utf-8", "replace"))

    return cpu(lambda: stage.apply(docs, ctx), 3), cpu(by_table, 3)


def bench_code(texts: list[str]) -> tuple[float, float]:
    thresholds = code_rules.CODE_PRESETS["starcoder2"].default
    column = pa.array(texts, pa.large_string())
    return (cpu(lambda: code_rules.evaluate(column, [thresholds] * len(texts))[0]),
            cpu(lambda: [code_rules.check_one(t, thresholds) for t in texts]))


def bench_text(texts: list[str]) -> tuple[float, float, float]:
    names = [("gopher_repetition", {}), ("gopher_quality", {}),
             ("c4", {"filter_no_terminal_punct": False}), ("fineweb", {})]
    ours = [build_rule(n, v, RegexWordTokenizer()) for n, v in names]
    theirs = [build_rule(n, v, "en") for n, v in names]

    def run(rules: list) -> list:
        # every filter on every document (no early exit), as a pipeline of steps would
        return [[rule.check(t)[0] for rule in rules] for t in texts]

    ours_s, theirs_s = cpu(lambda: run(ours)), cpu(lambda: run(theirs))
    same = sum((a is None) == (b is None) for ra, rb in zip(run(ours), run(theirs), strict=True)
               for a, b in zip(ra, rb, strict=True))
    return ours_s, theirs_s, same / (len(texts) * len(names))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code-mb", type=float, default=40.0)
    parser.add_argument("--text-mb", type=float, default=4.0)
    args = parser.parse_args()

    code, text, multi = code_corpus(args.code_mb), text_corpus(args.text_mb), multilingual_corpus()
    rows = []
    mb = size_mb(multi + text)
    ours, ref = bench_langid(multi + text)
    rows.append(("langid (fastText lid.176)", mb, ours, ref, "datatrove LanguageFilter"))
    files = code_files(args.code_mb)
    mb = size_mb(code)
    ours, ref = bench_code_langid(files)
    rows.append(("langid on code (go-enry)", mb, ours, ref, "the hand-written table"))
    per_file = (1e6 * ours / len(files), 1e6 * ref / len(files))
    ours, ref = bench_code(code)
    rows.append(("code quality (starcoder2)", mb, ours, ref, "per-file Python (check_one)"))
    mb = size_mb(text)
    ours, ref, agree = bench_text(text)
    rows.append(("text quality (fineweb: 4 filters)", mb, ours, ref,
                 f"datatrove + spaCy (decisions agree {agree:.1%})"))

    print(f"{'filter':36} {'MB':>7} {'ours MB/s/core':>15} {'ref MB/s/core':>14} {'ratio':>7}  "
          "reference")
    for name, size, ours_s, ref_s, label in rows:
        print(f"{name:36} {size:7.2f} {size / ours_s:15.2f} {size / ref_s:14.2f} "
              f"{ref_s / ours_s:6.1f}x  {label}")
    print(f"langid on code, CPU per file over {len(files):,} files: go-enry (whole stage) "
          f"{per_file[0]:.0f} us, table {per_file[1]:.0f} us")


if __name__ == "__main__":
    main()
