"""Programming language of a file from its name, shebang and (for .h) content.

A linguist-style table: exact file names first, then extensions, then the
shebang interpreter. Names follow The Stack's language names so that a
source's own `lang` column and our detection agree.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

EXTENSIONS: dict[str, str] = {
    # The Stack's main languages first.
    ".py": "Python", ".pyw": "Python", ".pyi": "Python",
    ".pyx": "Cython", ".pxd": "Cython", ".pxi": "Cython",
    ".js": "JavaScript", ".mjs": "JavaScript", ".cjs": "JavaScript", ".jsx": "JavaScript",
    ".ts": "TypeScript", ".mts": "TypeScript", ".cts": "TypeScript", ".tsx": "TSX",
    ".java": "Java",
    ".c": "C",
    ".h": "C",  # refined by content, see header_language
    ".cc": "C++", ".cpp": "C++", ".cxx": "C++", ".c++": "C++",
    ".hh": "C++", ".hpp": "C++", ".hxx": "C++", ".h++": "C++", ".inl": "C++", ".tcc": "C++",
    ".cs": "C#",
    ".go": "Go",
    ".rs": "Rust",
    ".php": "PHP", ".phtml": "PHP",
    ".rb": "Ruby", ".rake": "Ruby", ".gemspec": "Ruby",
    ".sh": "Shell", ".bash": "Shell", ".zsh": "Shell", ".ksh": "Shell",
    ".kt": "Kotlin", ".kts": "Kotlin",
    ".scala": "Scala", ".sc": "Scala",
    ".swift": "Swift",
    ".m": "Objective-C", ".mm": "Objective-C++",
    ".lua": "Lua",
    ".pl": "Perl", ".pm": "Perl", ".t": "Perl",
    ".r": "R", ".R": "R",
    ".jl": "Julia",
    ".hs": "Haskell", ".lhs": "Haskell",
    ".ml": "OCaml", ".mli": "OCaml",
    ".ex": "Elixir", ".exs": "Elixir",
    ".erl": "Erlang", ".hrl": "Erlang",
    ".clj": "Clojure", ".cljs": "Clojure", ".cljc": "Clojure",
    ".dart": "Dart",
    ".f90": "Fortran", ".f95": "Fortran", ".f03": "Fortran", ".f": "Fortran", ".for": "Fortran",
    ".sql": "SQL",
    ".html": "HTML", ".htm": "HTML", ".xhtml": "HTML",
    ".css": "CSS", ".scss": "SCSS", ".sass": "Sass", ".less": "Less",
    ".json": "JSON", ".jsonl": "JSON",
    ".yaml": "YAML", ".yml": "YAML",
    ".toml": "TOML",
    ".xml": "XML", ".xsd": "XML", ".xsl": "XML", ".svg": "XML",
    ".md": "Markdown", ".markdown": "Markdown",
    ".rst": "reStructuredText",
    ".tex": "TeX", ".sty": "TeX",
    ".cmake": "CMake",
    ".mk": "Makefile",
    ".bat": "Batchfile", ".cmd": "Batchfile",
    ".ps1": "PowerShell", ".psm1": "PowerShell",
    ".vue": "Vue",
    ".groovy": "Groovy", ".gradle": "Groovy",
    ".asm": "Assembly", ".s": "Assembly", ".S": "Assembly",
    ".proto": "Protocol Buffer",
    ".cu": "CUDA", ".cuh": "CUDA",
    ".vim": "Vim Script",
    ".el": "Emacs Lisp",
    ".lisp": "Common Lisp",
    ".scm": "Scheme",
    ".pas": "Pascal",
    ".v": "Verilog", ".sv": "SystemVerilog",
    ".vhd": "VHDL", ".vhdl": "VHDL",
    ".zig": "Zig",
    ".nim": "Nim",
    ".tcl": "Tcl",
    ".awk": "Awk",
    ".ipynb": "Jupyter Notebook",
    ".fs": "F#", ".fsi": "F#", ".fsx": "F#",
    ".vb": "Visual Basic",
    ".rkt": "Racket",
    ".adb": "Ada", ".ads": "Ada",
    ".jsp": "Java Server Pages",
    ".elm": "Elm",
    ".sol": "Solidity",
    ".nix": "Nix",
    ".tf": "HCL", ".hcl": "HCL",
    ".graphql": "GraphQL", ".gql": "GraphQL",
    ".svelte": "Svelte",
    ".hx": "Haxe",
    ".cr": "Crystal",
    ".purs": "PureScript",
    ".idr": "Idris",
    ".raku": "Raku", ".rakumod": "Raku",
    ".wat": "WebAssembly", ".wast": "WebAssembly",
}

FILENAMES: dict[str, str] = {
    "Makefile": "Makefile", "GNUmakefile": "Makefile", "makefile": "Makefile",
    "Dockerfile": "Dockerfile", "Containerfile": "Dockerfile",
    "CMakeLists.txt": "CMake",
    "Rakefile": "Ruby", "Gemfile": "Ruby", "Vagrantfile": "Ruby",
    "BUILD": "Starlark", "BUILD.bazel": "Starlark", "WORKSPACE": "Starlark",
    "SConstruct": "Python", "SConscript": "Python",
    "Jenkinsfile": "Groovy",
    ".bashrc": "Shell", ".bash_profile": "Shell", ".profile": "Shell", ".zshrc": "Shell",
    "configure": "Shell",
}

INTERPRETERS: dict[str, str] = {
    "python": "Python", "pypy": "Python",
    "sh": "Shell", "bash": "Shell", "zsh": "Shell", "ksh": "Shell", "dash": "Shell",
    "node": "JavaScript", "nodejs": "JavaScript", "deno": "TypeScript",
    "ruby": "Ruby", "perl": "Perl", "php": "PHP", "lua": "Lua",
    "Rscript": "R", "julia": "Julia", "tclsh": "Tcl", "wish": "Tcl",
    "awk": "Awk", "gawk": "Awk", "make": "Makefile", "osascript": "AppleScript",
}

_SHEBANG = re.compile(rb"^#!\s*(\S+)(?:\s+(\S+))?")
_VERSION_SUFFIX = re.compile(r"[\d.]+$")

# Constructs that occur in C++ or Objective-C headers but never in C.
_CPP_HEADER = re.compile(
    rb"^\s*(?:template\s*<|namespace\s+\w+\s*\{|class\s+\w+[^;]*\{|(?:public|private|protected)\s*:"
    rb"|using\s+namespace\b|#include\s*<(?:string|vector|memory|iostream|map|algorithm)>)"
    rb"|std::",
    re.MULTILINE,
)
_OBJC_HEADER = re.compile(rb"^\s*@(?:interface|protocol|end|property|import)\b", re.MULTILINE)


def interpreter_language(head: bytes) -> str | None:
    """Language named by a `#!` line, e.g. `#!/usr/bin/env python3` -> Python."""
    match = _SHEBANG.match(head)
    if not match:
        return None
    program = match.group(1).decode("utf-8", "replace").rsplit("/", 1)[-1]
    if program == "env":
        # `#!/usr/bin/env -S python3 -u`: the program is the first word that is not a flag.
        words = head[match.end(1):].split(b"\n", 1)[0].split()
        program = next((w.decode("utf-8", "replace") for w in words
                        if not w.startswith(b"-")), "")
    program = _VERSION_SUFFIX.sub("", program) or program
    return INTERPRETERS.get(program)


def header_language(head: bytes) -> str:
    """A `.h` file is C unless its content shows C++ or Objective-C."""
    if _OBJC_HEADER.search(head):
        return "Objective-C"
    if _CPP_HEADER.search(head):
        return "C++"
    return "C"


def detect_code_language(path: str, head: bytes = b"") -> str | None:
    """Language of the file at `path` whose first bytes are `head`, or None if unknown.

    `head` should hold the first few kilobytes; it is used for shebangs and
    for the .h ambiguity only.
    """
    name = PurePosixPath(path).name
    if name in FILENAMES:
        return FILENAMES[name]
    suffix = PurePosixPath(name).suffix
    language = EXTENSIONS.get(suffix) or EXTENSIONS.get(suffix.lower())
    if language is not None:
        return header_language(head) if suffix == ".h" else language
    if head.startswith(b"#!"):
        return interpreter_language(head)
    return None
