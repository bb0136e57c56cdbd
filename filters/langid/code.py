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

Names are The Stack v2's, wherever a label comes from. enry-python's linguist data
renamed five languages since the go-enry (linguist 7.27) The Stack v2 was labelled
with: `RENAMED` maps each new name to The Stack's, and `stack_name` gives The Stack's
spelling for either (any case). The Stack v1's `lang` column has older names still
(`VimL`, `Perl6`, `FORTRAN`): `STACK_V1_NAMES` maps them too. Detection,
`language_by_name` and `language_by_extension` answer in The Stack's names; ingest
applies `stack_name` to every code document's `lang` (a mapped column, `lang:`), so a
Stack v2 file labelled Coq and a `.v` file go-enry places meet under one name. `stack_name` needs no
go-enry, so labels are the same on every machine.

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

RENAMED = {"Rocq Prover": "Coq", "FreeBASIC": "FreeBasic", "Wolfram Language": "Mathematica",
           "Genero 4gl": "Genero", "Genero per": "Genero Forms"}
"""enry-python 0.2.0's name -> The Stack v2's, for the languages linguist renamed after
7.27 (go-enry's data/languageInfo.go at 40f2a1e against enry-python's: Genero and
Genero Forms became Genero 4gl and Genero per in linguist 7.28 under the same
LanguageID, the other three after linguist 9.0). The Stack's names are the canonical set: its
`language` column carries them, and so do the presets' and users' manifests."""
STACK_V1_NAMES = {
    # linguist's own aliases (go-enry's data/alias.go at 40f2a1e) name the successor:
    "Bro": "Zeek", "Cucumber": "Gherkin", "FORTRAN": "Fortran", "GAS": "Unix Assembly",
    "Groff": "Roff", "Matlab": "MATLAB", "MediaWiki": "Wikitext", "Octave": "MATLAB",
    "PAWN": "Pawn", "Perl6": "Raku", "RHTML": "HTML+ERB", "VimL": "Vim Script",
    # no alias, but every extension The Stack v1 gave the name has this one language in
    # go-enry's data/extension.go at 40f2a1e (.ino, .jsx, .jade, .kicad_pcb, .nim, .rl):
    "Arduino": "C++", "JSX": "JavaScript", "Jade": "Pug", "KiCad": "KiCad Layout",
    "Nimrod": "Nim", "Ragel in Ruby Host": "Ragel"}
"""The Stack v1's name -> The Stack v2's, for the 18 of v1's 22 `lang` values that are no
linguist 7.27 name. v1's names are the keys of bigcode-project/bigcode-dataset
`language_selection/programming-languages-to-file-extensions.json` (The Stack 1.1's
language selection; `preprocessing/filtering.py` `language_format_from_dataset` reads
the dataset's `lang` field in that spelling: `C#`, `F#`, names with spaces). The other
four have no one successor and stay as written: ASP (Classic ASP, ASP.NET), HTML+Django
(Mustache, Jinja), Maple (linguist has none; `.mpl` is JetBrains MPS) and Visual Basic
(Visual Basic .NET, VBA, VBScript, Visual Basic 6.0)."""
_STACK_SPELLING = {name.lower(): stack for new, stack in RENAMED.items()
                   for name in (new, stack)}
_STACK_SPELLING |= {old.lower(): stack for old, stack in STACK_V1_NAMES.items()}


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
    """The Stack's name of the language of the file at `path` with `content` (the whole
    file, or its start), None when go-enry cannot place it."""
    enry = _enry()
    content = content_window(content)
    CALLS["get_language"] += 1
    language: str = enry.get_language(_utf8(path), content)
    language = stack_name(_STACK_V2_LABEL.get(language, language))
    if language == "JavaScript" and content.startswith(b"#!"):
        suffix = path.rsplit("/", 1)[-1].rpartition(".")[2]
        kept = _EXTENSION_OVER_SHEBANG.get("." + suffix)
        if kept:
            return kept
    return language or None


def stack_name(label: str) -> str:
    """The Stack's name for a label of a language linguist renamed since (`Rocq Prover`,
    `coq` -> Coq; `Wolfram Language` -> Mathematica) or The Stack v1 spelled otherwise
    (`VimL` -> Vim Script, `FORTRAN` -> Fortran), any case; any other label as it is.
    Needs no go-enry."""
    return _STACK_SPELLING.get(label.lower(), label)


def language_by_name(name: str) -> str | None:
    """The Stack's name for a language name or alias (`python3`, `csharp`, `q`, `octave`,
    `Rocq Prover`), as go-enry resolves a Vim modeline's filetype; None if linguist has
    no such alias."""
    name = name.strip()
    if not name or any(c in name for c in ":\n\r\0"):
        return None
    if name.lower() in _STACK_SPELLING:  # Genero, VimL: names enry-python no longer knows
        return _STACK_SPELLING[name.lower()]
    enry = _enry()
    for spelled in (name, name.upper(), name.title(), name.capitalize()):  # c++ -> C++
        if enry.get_language_type(spelled) != "unknown":  # linguist's own name
            return stack_name(spelled)
    found: str = enry.get_language_by_vim_modeline(
        f"vim: set filetype={name}:\n".encode()).language
    return stack_name(found) if found else None


def language_by_extension(extension: str) -> str | None:
    """The Stack's name of an extension's language (`.py`), None if it has none."""
    found: str = _enry().get_language_by_extension("file" + extension).language
    return stack_name(found) if found else None


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
