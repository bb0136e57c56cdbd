"""Exactness of the fast encoder on every document of a demo run, and on the multilingual set.

Run by hand: `python -m tests.bench.bench_tokenize_exact [RUN_DIR]` (default runs/demo,
built by `lemur-data build --manifest manifests/demo.yaml`). Every document the run's
tokenize step encoded (its last document step's parquet) is encoded again by the
reference (sentencepiece) and by the chosen encoder; both are compared with each
other and with the ids the run stored (less the EOS). The multilingual set
(tests/realdata.py: pycountry's translations in 156 locales, code in every grammar
language) is compared the same way. Prints every difference; exits 1 if any.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from lemur_data.stages.tokenize.backends import split
from lemur_data.stages.tokenize.tokenizer import TokenizerConfig, load_tokenizer
from tests.realdata import grammar_code, translated_catalogs


def run_documents(run_dir: Path) -> tuple[list[str], list[list[int]] | None]:
    """Texts of the run's tokenized documents and the ids it stored (without EOS)."""
    folder = sorted(p for p in (run_dir / "stages").iterdir() if p.name.endswith("tokenize"))[-1]
    texts: list[str] = []
    stored: list[list[int]] = []
    for path in sorted(folder.glob("*.parquet")):
        table = pq.read_table(path, columns=["text", "token_ids"])
        texts += table.column("text").to_pylist()
        stored += [ids[:-1] for ids in table.column("token_ids").to_pylist()]
    return texts, stored


def compare(name: str, texts: list[str], stored: list[list[int]] | None) -> int:
    tokenizer = load_tokenizer(TokenizerConfig())
    started = time.process_time()
    want = tokenizer.encode_reference(texts)
    t_ref = time.process_time() - started
    started = time.process_time()
    got = split(*tokenizer.encode_flat(texts))
    t_fast = time.process_time() - started
    bad = [i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b]
    if stored is not None:
        bad += [i for i, (a, b) in enumerate(zip(stored, want, strict=True)) if a != b]
    mb = sum(len(t.encode()) for t in texts) / 2**20
    print(f"{name:<14}{len(texts):>7} docs {mb:>7.1f} MB {sum(map(len, want)):>11,} tokens  "
          f"{tokenizer.engine} vs {tokenizer.describe()['reference']}: "
          f"{len(set(bad))} documents differ  (cpu s: reference {t_ref:.2f}, "
          f"{tokenizer.engine.split()[0]} {t_fast:.2f})")
    for i in sorted(set(bad))[:20]:
        print(f"  differs: document {i}: {texts[i][:80]!r}")
    return len(set(bad))


def main() -> None:
    run_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/demo")
    texts, stored = run_documents(run_dir)
    differ = compare("demo", texts, stored)
    multilingual = list(translated_catalogs().values()) + [
        t for files in grammar_code(10).values() for t in files]
    differ += compare("multilingual", multilingual, None)
    print("identical" if not differ else f"{differ} DIFFERENCES")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
