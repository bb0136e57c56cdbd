"""A repository's files as one training document (StarCoder2, DeepSeek-Coder). Pure.

- `starcoder2`: `<repo_name>NAME<file_sep>PATH\\nCODE<file_sep>PATH\\nCODE...`, or
  without metadata `<file_sep>CODE<file_sep>CODE...` (StarCoder2 drops the names
  and paths from a share of its repository documents).
- `path_comments`: DeepSeek-Coder's style, each file preceded by its path as a
  comment of its language, files joined by a newline.

The tags are plain text here; docs/stages.md says how they reach a tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

REPO_NAME, FILE_SEP = "<repo_name>", "<file_sep>"
SPECIAL_TOKENS = (REPO_NAME, FILE_SEP)

_HASH = ("#", "")
_SLASHES = ("//", "")
_COMMENTS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("Python", "Cython", "Shell", "Ruby", "Perl", "R", "Julia", "YAML", "TOML",
                     "Makefile", "CMake", "Dockerfile", "PowerShell", "Elixir", "Nim", "Tcl",
                     "Awk", "Crystal", "Starlark", "Raku", "GraphQL", "Nix", "HCL"), _HASH),
    **dict.fromkeys(("C", "C++", "CUDA", "C#", "Java", "JavaScript", "TypeScript", "TSX", "Go",
                     "Rust", "Swift", "Kotlin", "Scala", "PHP", "Dart", "Groovy", "Objective-C",
                     "Objective-C++", "F#", "Zig", "Solidity", "Protocol Buffer", "Verilog",
                     "SystemVerilog", "JSON", "Vue", "Svelte", "Haxe", "Less", "SCSS"), _SLASHES),
    **dict.fromkeys(("SQL", "Lua", "Haskell", "Ada", "Elm", "PureScript", "Idris", "VHDL"),
                    ("--", "")),
    **dict.fromkeys(("HTML", "XML", "Markdown"), ("<!--", " -->")),
    "CSS": ("/*", " */"), "TeX": ("%", ""), "Erlang": ("%", ""), "MATLAB": ("%", ""),
    "Emacs Lisp": (";;", ""), "Common Lisp": (";;", ""), "Scheme": (";;", ""),
    "Clojure": (";;", ""), "Racket": (";;", ""), "Fortran": ("!", ""), "Vim Script": ('"', ""),
    "Batchfile": ("REM", ""), "Assembly": (";", ""), "OCaml": ("(*", " *)"),
    "Pascal": ("//", ""), "reStructuredText": ("..", ""), "Visual Basic": ("'", ""),
}


@dataclass(frozen=True)
class RepoFile:
    path: str
    text: str
    lang: str | None


def starcoder2(repo: str, files: Sequence[RepoFile], metadata: bool) -> str:
    if metadata:
        return REPO_NAME + repo + "".join(f"{FILE_SEP}{f.path}\n{f.text}" for f in files)
    return "".join(FILE_SEP + f.text for f in files)


def path_comments(files: Sequence[RepoFile]) -> str:
    parts = []
    for f in files:
        start, end = _COMMENTS.get(f.lang or "", _HASH)
        parts.append(f"{start} {f.path}{end}\n{f.text}")
    return "\n".join(parts)


def split_starcoder2(text: str) -> tuple[str | None, list[tuple[str | None, str]]]:
    """The inverse of `starcoder2`: (repo name or None, [(path or None, text)])."""
    head, *chunks = text.split(FILE_SEP)
    if head.startswith(REPO_NAME):
        name = head[len(REPO_NAME):]
        return name, [(path, body) for path, _, body in (c.partition("\n") for c in chunks)]
    return None, [(None, c) for c in chunks]


def chunks_by_bytes(sizes: Sequence[int], max_bytes: int) -> list[range]:
    """Consecutive runs of files of at most `max_bytes` (a larger file stands alone)."""
    runs: list[range] = []
    start, total = 0, 0
    for i, size in enumerate(sizes):
        if i > start and total + size > max_bytes:
            runs.append(range(start, i))
            start, total = i, 0
        total += size
    if sizes:
        runs.append(range(start, len(sizes)))
    return runs
