"""Which short benchmark snippets real code already has: the rarity test of short code parts.

A code part under `substring_min_chars` is searched only when it is rare. Rare means:
absent from a background sample of real code, by default the standard library of the
running Python (1,800 modules, 22 MB once whitespace is removed). The snippets are
searched in that sample in one Aho-Corasick pass; the answer is cached on disk per set
of snippets and files (name, size, mtime), so a machine pays the ~5 s scan once, not
once per worker.
"""

from __future__ import annotations

import hashlib
import json
import os
import sysconfig
from collections.abc import Sequence
from pathlib import Path

import ahocorasick

from ...filters.decontaminate import strip_whitespace

SUFFIXES = (".py",)


def default_roots() -> list[str]:
    return [sysconfig.get_paths()["stdlib"]]


def background_files(roots: Sequence[str]) -> list[Path]:
    """The code files under `roots` (a file counts as itself), sorted, site-packages left
    out of the stdlib default so an installed benchmark package cannot vouch for itself."""
    files: set[Path] = set()
    for root in roots:
        path = Path(root)
        if path.is_file():
            files.add(path)
            continue
        if not path.is_dir():
            raise FileNotFoundError(f"decontaminate: background path {root!r} does not exist")
        files.update(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file()
                     and "site-packages" not in p.relative_to(path).parts)
    return sorted(files)


def _cache_dir() -> Path:
    return Path(os.environ.get("LEMUR_DATA_CACHE") or Path.home() / ".cache" / "lemur-data")


def common_snippets(keys: Sequence[str], roots: Sequence[str]) -> frozenset[str]:
    """The whitespace-free `keys` that occur in any background file under `roots`."""
    if not keys or not roots:
        return frozenset()
    files = background_files(roots)
    digest = hashlib.sha256(json.dumps(
        [sorted(keys), [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files]]
    ).encode()).hexdigest()[:24]
    cache = _cache_dir() / f"decontam-background-{digest}.json"
    if cache.is_file():
        return frozenset(json.loads(cache.read_text()))
    automaton = ahocorasick.Automaton()
    for key in keys:
        automaton.add_word(key, key)
    automaton.make_automaton()
    found: set[str] = set()
    for path in files:
        text = strip_whitespace(path.read_text(encoding="utf-8", errors="replace"))
        found.update(key for _end, key in automaton.iter(text))
    try:  # a cache is a convenience: a read-only home only costs the scan again
        cache.parent.mkdir(parents=True, exist_ok=True)
        scratch = cache.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(sorted(found)))
        scratch.replace(cache)
    except OSError:
        pass
    return frozenset(found)
