"""Programming language and file classes of a code file, from go-enry.

go-enry (github.com/go-enry/go-enry, through the enry-python wheel) is the Go port
of GitHub's linguist, and the detector The Stack v2 was labelled with: its language
names are linguist's, which are The Stack's. `detect_code_language` asks it in its
own order (`GetLanguage`: modeline, file name, shebang, extension, content
heuristics, then the Bayesian classifier among the candidates still open).

Two exceptions, where The Stack's labels differ from go-enry's:
- a file whose extension is TypeScript's and whose shebang names node (`bin.d.ts`
  starting with `#!/usr/bin/env node`) is TypeScript, as The Stack labels it by its
  extension and as the syntax stage must parse it; go-enry asks the shebang first
  and says JavaScript;
- Tree-sitter Query is Scheme. enry-python 0.2.0 carries linguist data newer than
  go-enry's master of February 2025: it adds Tree-sitter Query for `.scm`, and its classifier
  then calls Guile's own Scheme modules queries. The Stack v2 was labelled with
  go-enry built from its master in 2023 (bigcode-project/the-stack-v2,
  `the_stack/2_download_files/setup_enry.sh`), whose data (and every master up to
  February 2025, linguist 9.0) gives `.scm` to Scheme alone, so The Stack calls every
  `.scm` file Scheme.
Both are tested on real files (tests/test_langid.py) and listed in docs/stages.md.

enry-python ships wheels for x86_64 Linux and macOS only. Elsewhere (Linux
aarch64 today) `detector()` raises `DetectorUnavailable` naming the platform:
code language is never silently taken from another table, so a run's labels do
not change between machines (`DETECTOR` also goes into the manifest's
fingerprint).
"""

from __future__ import annotations

import importlib.metadata
import platform
from collections import Counter
from dataclasses import dataclass
from functools import cache
from types import ModuleType

CONTENT_BYTES = 64 * 1024
"""Content go-enry sees: the first 62 KiB and the last 2 KiB (a modeline may sit in
the last 5 lines) of a longer file."""
TAIL_BYTES = 2048

# Extension -> the language it keeps over a shebang's (The Stack labels by extension).
_EXTENSION_OVER_SHEBANG = {".ts": "TypeScript", ".mts": "TypeScript", ".cts": "TypeScript",
                           ".tsx": "TSX"}
# Languages the go-enry The Stack v2 was labelled with could not answer -> the label it
# gave those files (go-enry's data/extension.go at 40f2a1e, 2023-09-27: ".scm": Scheme).
_STACK_V2_LABEL = {"Tree-sitter Query": "Scheme"}


CALLS: Counter[str] = Counter()
"""go-enry calls made in this process, by function (`get_language`, `is_vendor`, ...):
how tests see that a source's own columns spared the detection."""


class DetectorUnavailable(RuntimeError):
    """go-enry cannot be loaded on this machine."""


@dataclass(frozen=True)
class FileClass:
    """One of go-enry's file classes: the code rule's name, enry-python's function, and
    go-enry's (Go) name for it, which removal details cite."""

    rule: str
    function: str
    go_name: str
    needs_content: bool = False


FILE_CLASSES = (FileClass("vendored", "is_vendor", "IsVendor"),
                FileClass("generated", "is_generated", "IsGenerated", needs_content=True),
                FileClass("documentation", "is_documentation", "IsDocumentation"),
                FileClass("dotfile", "is_dot_file", "IsDotFile"),
                FileClass("configuration", "is_configuration", "IsConfiguration"),
                FileClass("test", "is_test", "IsTest"))


@cache
def _enry() -> ModuleType:
    try:
        import enry
    except (ImportError, OSError) as error:
        raise DetectorUnavailable(
            f"code language needs go-enry (pip install enry-python), which has no wheel or "
            f"does not load on {platform.system()} {platform.machine()}: {error}. "
            "Give code sources a language column (`columns: {lang: ...}`) or `lang:`, "
            "or run on x86_64 Linux or macOS") from None
    return enry


def detector() -> str:
    """The detector and its version, e.g. `go-enry (enry-python 0.2.0)`: what the
    dataset card and the manifest's fingerprint name. Raises DetectorUnavailable."""
    _enry()
    return f"go-enry (enry-python {importlib.metadata.version('enry-python')})"


def available() -> str | None:
    """None when go-enry loads here, else the reason it does not."""
    try:
        _enry()
    except DetectorUnavailable as error:
        return str(error)
    return None


def content_window(content: bytes) -> bytes:
    if len(content) <= CONTENT_BYTES:
        return content
    return content[:CONTENT_BYTES - TAIL_BYTES] + content[-TAIL_BYTES:]


def detect_code_language(path: str, content: bytes = b"") -> str | None:
    """Linguist's name of the language of the file at `path` with `content` (the whole
    file, or its start), None when go-enry cannot place it."""
    enry = _enry()
    content = content_window(content)
    CALLS["get_language"] += 1
    language: str = enry.get_language(_utf8(path), content)
    language = _STACK_V2_LABEL.get(language, language)
    if language == "JavaScript" and content.startswith(b"#!"):
        suffix = path.rsplit("/", 1)[-1].rpartition(".")[2]
        kept = _EXTENSION_OVER_SHEBANG.get("." + suffix)
        if kept:
            return kept
    return language or None


def language_by_name(name: str) -> str | None:
    """Linguist's name for a language name or alias (`python3`, `csharp`, `q`, `octave`),
    as go-enry resolves a Vim modeline's filetype; None if linguist has no such alias."""
    name = name.strip()
    if not name or any(c in name for c in ":\n\r\0"):
        return None
    enry = _enry()
    for spelled in (name, name.upper(), name.title(), name.capitalize()):  # c++ -> C++
        if enry.get_language_type(spelled) != "unknown":  # linguist's own name
            return spelled
    found: str = enry.get_language_by_vim_modeline(
        f"vim: set filetype={name}:\n".encode()).language
    return found or None


def language_by_extension(extension: str) -> str | None:
    """Linguist's language of an extension (`.py`), None if it has none."""
    found: str = _enry().get_language_by_extension("file" + extension).language
    return found or None


def in_class(kind: FileClass, path: str, content: bytes = b"") -> bool:
    """go-enry's verdict: is the file at `path` (with `content`, for `generated`) one of
    the `kind` class?"""
    function = getattr(_enry(), kind.function)
    CALLS[kind.function] += 1
    path = _utf8(path)
    return bool(function(path, content_window(content)) if kind.needs_content
                else function(path))


def _utf8(path: str) -> str:
    """`path` as enry-python can encode it: a file name with non-UTF-8 bytes
    (surrogateescape, as os.listdir gives it) keeps its extension, the bad bytes
    become U+FFFD (enry calls `path.encode()`, which refuses lone surrogates)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
