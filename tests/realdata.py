"""Real input built from files this machine has (the Python installation)."""

from __future__ import annotations

import gzip
import json
import sysconfig
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PURELIB = Path(sysconfig.get_paths()["purelib"])


def stdlib_files(package: str = "email", limit: int = 40) -> list[Path]:
    return sorted((STDLIB / package).rglob("*.py"))[:limit]


def stack_parquet(path: Path, files: list[Path], row_group_size: int = 16) -> pa.Table:
    """A parquet file with The Stack's column names, holding real source files."""
    table = pa.table({
        "content": [f.read_text() for f in files],
        "max_stars_repo_path": [str(f.relative_to(STDLIB)) for f in files],
        "max_stars_repo_name": ["python/cpython"] * len(files),
        "max_stars_count": list(range(1, len(files) + 1)),
        "max_stars_repo_licenses": [["PSF-2.0", "0BSD"]] * len(files),
        "lang": ["Python"] * len(files),
    })
    pq.write_table(table, path, row_group_size=row_group_size)
    return table


def prose_paragraphs() -> list[str]:
    """Real English prose: the help() topics every Python install ships."""
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


def write_jsonl(path: Path, records: list[dict], compress: str | None = None) -> None:
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    if compress == "gz":
        data = gzip.compress(data, mtime=0)
    elif compress == "zst":
        import zstandard

        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)


def prose_sentences() -> list[str]:
    """Real English sentences: help() topics and the docstrings of stdlib modules."""
    import importlib
    import re

    texts = prose_paragraphs()
    for name in ("argparse", "asyncio", "collections", "csv", "dataclasses", "datetime",
                 "decimal", "email", "functools", "http.client", "json", "logging", "os",
                 "pathlib", "random", "re", "shutil", "socket", "sqlite3", "statistics",
                 "string", "subprocess", "tarfile", "textwrap", "threading",
                 "unittest", "urllib.parse", "uuid", "zipfile"):
        module = importlib.import_module(name)
        docs = [getattr(getattr(module, attr), "__doc__", None) for attr in sorted(dir(module))
                if not attr.startswith("_")]
        texts += [doc for doc in [module.__doc__, *docs] if isinstance(doc, str)]
    sentences: set[str] = set()
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
            # prose, not signatures or code: several words, mostly letters
            words = sentence.split()
            if 6 <= len(words) <= 60 and sum(w.isalpha() for w in words) >= 0.7 * len(words):
                sentences.add(sentence)
    return sorted(sentences)


def perturbed_prose(count: int, seed: int, sentences: int = 12) -> list[str]:
    """`count` documents of real sentences in a seeded draw: each one a new paragraph
    of `sentences` sentences sampled from the real pool, so no two are (near-)duplicates
    while every sentence is real English."""
    import random

    pool = prose_sentences()
    rng = random.Random(seed)
    return [" ".join(rng.sample(pool, sentences)) for _ in range(count)]


def translated_catalogs(per_locale_chars: int = 4000) -> dict[str, str]:
    """Real text in many languages and scripts: pycountry's translations (country,
    language, currency and script names in 160 locales: Latin, Cyrillic, Greek,
    Arabic, Hebrew, Devanagari and other Indic scripts, Thai, Lao, Khmer, Myanmar,
    Georgian, Armenian, Ethiopic, Cherokee, Thaana, Tibetan, Canadian syllabics, CJK,
    Hangul). One document per locale: its messages, one a line, up to `per_locale_chars`."""
    import gettext

    import pycountry

    docs: dict[str, str] = {}
    for folder in sorted((Path(pycountry.__file__).parent / "locales").iterdir()):
        lines: list[str] = []
        for mo in sorted((folder / "LC_MESSAGES").glob("*.mo")):
            with mo.open("rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
            lines += [v for k, v in sorted(catalog.items(), key=lambda kv: str(kv[0]))
                      if k and isinstance(v, str) and v != k]
        text = "\n".join(lines)[:per_locale_chars]
        if text:
            docs[folder.name] = text
    return docs


def grammar_code(per_language: int = 3) -> dict[str, list[str]]:
    """Real source files in every language the syntax stage has a grammar for, from the
    calibration lists (Debian/npm/PyPI fixtures)."""
    from lemur_data.filters.syntax import check
    from tests.calibration import corpus

    out: dict[str, list[str]] = {}
    for language in sorted(check.GRAMMARS):
        entries = [e for e in corpus.listed(language) if corpus.exists(e)][:per_language]
        out[language] = [corpus.read(e).decode("utf-8", errors="replace") for e in entries]
    return out
