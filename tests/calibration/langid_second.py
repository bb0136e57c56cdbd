"""A second code-language set: packages no validation or calibration list holds.

    python -m tests.calibration.langid_second [--show-wrong N]

Each file's language is what its package states, never go-enry's answer:
- Debian packages of one language each (`DEBIAN`, fetched by tests/fixtures/fetch.py):
  the language of the package's extensions (vim-runtime's `.vim` is Vim Script,
  swi-prolog-core's `.pl` is Prolog, octave-common's `.m` is MATLAB, ...);
- Pygments' example files (its sdist's `tests/examplefiles/<lexer>/`): the lexer the
  file is filed under, named in linguist's names by the lexer's name or its aliases
  (`language_by_name`: linguist's alias table, which go-enry carries, and The Stack
  v1's names; a lookup of names, not a detection of the file). Lexers of sessions,
  tracebacks and templates (a `pycon` file is not Python source) and lexers linguist
  has no language for are left out (ODIN and TEAL too: linguist's Odin and Teal are
  other languages), and so are files whose name none of the lexer's file-name
  patterns matches (Pygments' own naming, `django_sample.html+django`, and its
  `.output` golden files). A detected language linguist groups under the stated one
  (`Fortran Free Form` under Fortran) counts as right (`GROUPS`). Two files whose
  folder's lexer is not their language by linguist's own definitions carry the
  language they are (`RELABELLED`, each with its reason).

Up to PER_PACKAGE files per package and language, spread over the package (every
k-th file). `tests/test_langid.py` measures it; docs/stages.md and the README report it.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from lemur_data.filters.langid.code import detect_code_language, language_by_name
from tests.fixtures.fetch import cache_dir, folder_name

PER_PACKAGE = 150
MIN_BYTES, MAX_BYTES = 64, 512 * 1024
# Package -> {extension: the language the package states for it}.
DEBIAN: dict[str, dict[str, str]] = {
    "vim-runtime": {".vim": "Vim Script"},
    "elpa-dash": {".el": "Emacs Lisp"}, "elpa-s": {".el": "Emacs Lisp"},
    "elpa-markdown-mode": {".el": "Emacs Lisp"}, "elpa-yasnippet": {".el": "Emacs Lisp"},
    "texlive-latex-base": {".sty": "TeX", ".tex": "TeX", ".cls": "TeX"},
    "libtcl8.6": {".tcl": "Tcl"},
    "lua-penlight": {".lua": "Lua"},
    "perl-modules-5.36": {".pm": "Perl", ".pl": "Perl"},
    "erlang-src": {".erl": "Erlang", ".hrl": "Erlang", ".c": "C", ".java": "Java"},
    "guile-3.0-libs": {".scm": "Scheme"},
    "swi-prolog-core": {".pl": "Prolog"},
    "cl-alexandria": {".lisp": "Common Lisp"},
    "cmake-data": {".cmake": "CMake", ".rst": "reStructuredText"},
    "valac-0.56-vapi": {".vapi": "Vala"},
    "gawk": {".awk": "Awk"},
    "octave-common": {".m": "MATLAB"},
}
PYGMENTS = ("pygments", "pygments-2.18.0/tests/examplefiles")
FIXTURES = (*DEBIAN, PYGMENTS[0])
"""The fixtures of this set: validation.py leaves them out of its own half."""
# Lexers whose files are not the source the name suggests, or whose name linguist
# gives to another language.
_LEFT_OUT_WORDS = ("session", "console", "traceback", "template", "repl", "irb")
# Linguist's `group:` entries the stated labels fall in (languages.yml).
GROUPS = {"Fortran Free Form": "Fortran", "Roff Manpage": "Roff"}
# (lexer folder, file name) -> (linguist's language of the file, why the folder's lexer
# is not it).
RELABELLED = {
    ("groovy", "test.gradle"): (
        "Gradle", "linguist's languages.yml gives `.gradle` to Gradle, a language of its "
        "own (Pygments' Groovy lexer claims `*.gradle`)"),
    ("verilog", "example_coq.v"): (
        "Coq", "a Coq proof (`Lemma ... Qed.`) that Pygments files with its Verilog "
        "samples to test `.v`'s ambiguity (The Stack's name; linguist now says Rocq Prover)"),
}
# Lexers whose name linguist gives to another language (so linguist has none for theirs):
# Pygments' ODIN is Object Data Instance Notation, not the Odin programming language;
# its TEAL is Algorand's Transaction Execution Approval Language (stack assembly,
# `*.teal`), while linguist's Teal is the typed dialect of Lua (`.tl`; enry-python
# 0.2.0's data, absent from the go-enry The Stack v2 used).
_LEFT_OUT = frozenset(("text", "yaml+jinja", "genshitext", "jsp", "cfc", "cfm", "erl",
                       "iex", "pytb", "pycon", "rbcon",
                       "odin", "teal"))


def _text(path: Path) -> bytes | None:
    if path.is_symlink() or not path.is_file():
        return None
    if not MIN_BYTES <= path.stat().st_size <= MAX_BYTES:
        return None
    data = path.read_bytes()
    return None if b"\0" in data[:8192] else data


def _spread(paths: list[Path], limit: int) -> list[Path]:
    step = max(1, len(paths) // limit)
    ordered = [paths[i] for i in sorted(range(len(paths)), key=lambda i: (i % step, i))]
    return ordered


def pygments_language(folder: str) -> tuple[str, list[str]] | None:
    """Linguist's name for the Pygments lexer `folder` names, and the lexer's file-name
    patterns; None if left out."""
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    if folder in _LEFT_OUT:
        return None
    try:
        lexer = get_lexer_by_name(folder)
    except ClassNotFound:
        return None
    if any(word in lexer.name.lower() for word in _LEFT_OUT_WORDS):
        return None
    for name in (lexer.name, *lexer.aliases):
        found = language_by_name(name)
        if found:
            return found, list(lexer.filenames)
    return None


def same_language(stated: str, detected: str | None) -> bool:
    """`detected` is `stated` or a language linguist's languages.yml groups under it
    (`group: Fortran` for Fortran Free Form): the labels name the group."""
    return detected == stated or GROUPS.get(detected or "") == stated


def sample() -> Iterator[tuple[str, Path, str]]:
    """(package, file, stated language) of the second set."""
    root = cache_dir()
    for package, extensions in DEBIAN.items():
        folder = root / folder_name(package)
        by_language: dict[str, list[Path]] = {}
        for path in sorted(folder.rglob("*")):
            if "DEBIAN" in path.relative_to(folder).parts[:1]:
                continue
            language = extensions.get(path.suffix)
            if language:
                by_language.setdefault(language, []).append(path)
        for language, paths in sorted(by_language.items()):
            taken = 0
            for path in _spread(paths, PER_PACKAGE):
                if taken < PER_PACKAGE and _text(path) is not None:
                    taken += 1
                    yield package, path, language
    examples = root / folder_name(PYGMENTS[0]) / PYGMENTS[1]
    for lexer in sorted(os.listdir(examples)):
        found = pygments_language(lexer)
        if found is None:
            continue
        language, patterns = found
        for path in sorted((examples / lexer).iterdir()):
            # A real file name the lexer claims (`*.f90`), not Pygments' test naming
            # (`django_sample.html+django`, `coq_test`).
            if (path.suffix != ".output" and _text(path) is not None
                    and any(fnmatch.fnmatchcase(path.name, p) for p in patterns)):
                stated = RELABELLED.get((lexer, path.name), (language, ""))[0]
                yield f"pygments:{lexer}", path, stated


def measure() -> tuple[Counter[str], Counter[str], list[tuple[str, str, str | None]]]:
    """Right and total per stated language, and the misses (file, stated, detected)."""
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    wrong: list[tuple[str, str, str | None]] = []
    for _package, path, stated in sample():
        detected = detect_code_language(str(path), path.read_bytes())
        total[stated] += 1
        right[stated] += same_language(stated, detected)
        if not same_language(stated, detected):
            wrong.append((str(path), stated, detected))
    return right, total, wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show-wrong", type=int, default=30)
    args = parser.parse_args()
    right, total, wrong = measure()
    files = sum(total.values())
    print(f"{files:,} files in {len(total)} languages: {sum(right.values()) / files:.4f}")
    for language, count in total.most_common():
        if count >= 20:
            print(f"  {language:24s} {count:5d} {right[language] / count:.3f}")
    for path, stated, detected in wrong[:args.show_wrong]:
        print(f"  {stated} -> {detected}: {path}")


if __name__ == "__main__":
    main()
