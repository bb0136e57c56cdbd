"""The hand-written language table lemur-data used before go-enry, kept for the tests.

`EXTENSIONS` states a file's language the way The Stack labels by extension, without
asking the detector under test (validation.stated_language); `detect_code_language`
is the old detector, which tests/bench/bench_filters.py times beside go-enry. Its
order: modeline, file name, extension (content heuristics for `.h`, `.ts`, `.m`,
`.pl`, `.inc`), shebang.
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
    ".sh": "Shell", ".bash": "Shell", ".zsh": "Shell", ".ksh": "Shell", ".bats": "Shell",
    ".command": "Shell",
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
    # Shell start-up files and build scripts (linguist's Shell filenames).
    ".bash_aliases": "Shell", ".bash_logout": "Shell", ".bash_functions": "Shell",
    "bash.bashrc": "Shell", "bashrc": "Shell", "bash_profile": "Shell", "bash_logout": "Shell",
    ".kshrc": "Shell", ".zshenv": "Shell", ".zprofile": "Shell", ".zlogin": "Shell",
    ".zlogout": "Shell", "zshrc": "Shell", "zshenv": "Shell", "zprofile": "Shell",
    "profile": "Shell", "PKGBUILD": "Shell", "APKBUILD": "Shell", "gradlew": "Shell",
    ".envrc": "Shell",
    "Podfile": "Ruby", "Guardfile": "Ruby", "Capfile": "Ruby", "Berksfile": "Ruby",
    "Brewfile": "Ruby", "Thorfile": "Ruby", ".irbrc": "Ruby", ".pryrc": "Ruby",
    "Snakefile": "Python", "wscript": "Python", ".pythonrc": "Python",
    "Kbuild": "Makefile", "BSDmakefile": "Makefile",
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
    "ash": "Shell", "mksh": "Shell", "pdksh": "Shell",
    "node": "JavaScript", "nodejs": "JavaScript", "deno": "TypeScript", "ts-node": "TypeScript",
    "ruby": "Ruby", "perl": "Perl", "php": "PHP", "lua": "Lua",
    "Rscript": "R", "julia": "Julia", "tclsh": "Tcl", "wish": "Tcl",
    "awk": "Awk", "gawk": "Awk", "mawk": "Awk", "nawk": "Awk", "make": "Makefile",
    "osascript": "AppleScript", "tcsh": "Tcsh", "csh": "Tcsh", "fish": "fish",
    "runghc": "Haskell", "runhaskell": "Haskell", "escript": "Erlang", "elixir": "Elixir",
    "guile": "Scheme", "sbcl": "Common Lisp", "groovy": "Groovy", "scala": "Scala",
    "crystal": "Crystal", "dart": "Dart", "expect": "Tcl", "pwsh": "PowerShell",
}

# Editor modes (Emacs major modes without `-mode`, Vim filetypes) -> language. Lower case.
MODES: dict[str, str] = {
    **dict.fromkeys(("sh", "shell-script", "bash", "ksh", "zsh", "shell"), "Shell"),
    **dict.fromkeys(("python", "python3", "python-mode"), "Python"),
    **dict.fromkeys(("perl", "cperl"), "Perl"),
    "ruby": "Ruby", "enh-ruby": "Ruby", "c": "C", "c++": "C++", "cpp": "C++",
    **dict.fromkeys(("js", "js2", "js3", "javascript", "rjsx"), "JavaScript"),
    "typescript": "TypeScript", "java": "Java", "go": "Go", "rust": "Rust", "php": "PHP",
    "csharp": "C#", "cs": "C#", "lua": "Lua", "tcl": "Tcl", "awk": "Awk",
    **dict.fromkeys(("make", "makefile", "gnumakefile", "makefile-gmake",
                     "makefile-automake", "makefile-bsdmake"), "Makefile"),
    **dict.fromkeys(("emacs-lisp", "elisp", "lisp-interaction"), "Emacs Lisp"),
    "lisp": "Common Lisp", "scheme": "Scheme", "vim": "Vim Script", "html": "HTML",
    "css": "CSS", "json": "JSON", "yaml": "YAML", "xml": "XML", "nxml": "XML",
    "sql": "SQL", "tex": "TeX", "latex": "TeX", "cmake": "CMake", "haskell": "Haskell",
    "objc": "Objective-C", "objective-c": "Objective-C", "m4": "M4", "autoconf": "M4",
    "fortran": "Fortran", "f90": "Fortran", "erlang": "Erlang", "elixir": "Elixir",
    "scala": "Scala", "kotlin": "Kotlin", "swift": "Swift", "groovy": "Groovy",
}
# Emacs: `-*- shell-script -*-`, `-*- mode: python; coding: utf-8 -*-` (a line with only
# variables, `-*- coding: utf-8 -*-`, names no mode).
_EMACS = re.compile(rb"-\*-(.*?)-\*-")
_EMACS_MODE = re.compile(rb"(?:^|;)\s*mode\s*:\s*([\w+.-]+)", re.I)
# Vim: `vim: set ft=sh :`, `vi: filetype=python`, `ex: filetype=sh`, `vim600: syntax=c`.
_VIM = re.compile(rb"(?:^|\s)(?:vim?|Vim|ex)(?:[<=>]?\d+)?:.*?[\s:](?:ft|filetype|syntax)"
                  rb"\s*=\s*([\w+.-]+)")

_SHEBANG = re.compile(rb"^#!\s*(\S+)(?:\s+(\S+))?")
MODELINE_LINES = 5  # searched at each end of the file, as linguist does
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
        # `#!/usr/bin/env -S python3 -u`, `env LANG=C perl`: the program is the first
        # word that is neither a flag nor a variable assignment.
        words = head[match.end(1):].split(b"\n", 1)[0].split()
        program = next((w.decode("utf-8", "replace").rsplit("/", 1)[-1] for w in words
                        if not w.startswith(b"-") and b"=" not in w), "")
    program = _VERSION_SUFFIX.sub("", program) or program
    return INTERPRETERS.get(program)


def _mode_language(mode: bytes) -> str | None:
    name = mode.decode("ascii", "replace").lower()
    return MODES.get(name) or MODES.get(name.removesuffix("-mode"))


def modeline_language(head: bytes, tail: bytes = b"") -> str | None:
    """Language an Emacs or Vim modeline in the first or last 5 lines names, if any."""
    lines = head.split(b"\n", MODELINE_LINES)[:MODELINE_LINES]
    if tail:
        lines += tail.rsplit(b"\n", MODELINE_LINES + 1)[-MODELINE_LINES - 1:]
    for line in lines:
        if b"-*-" in line:
            found = _EMACS.search(line)
            if found:
                inner = found.group(1).strip()
                mode = _EMACS_MODE.search(inner)
                if mode:
                    language = _mode_language(mode.group(1))
                elif b":" not in inner:  # `-*- shell-script -*-`
                    language = _mode_language(inner.rstrip(b";").strip())
                else:
                    language = None
                if language:
                    return language
        if b"ex" in line or b"vi" in line or b"Vim" in line:
            found = _VIM.search(line)
            if found:
                language = _mode_language(found.group(1))
                if language:
                    return language
    return None


def header_language(head: bytes) -> str:
    """A `.h` file is C unless its content shows C++ or Objective-C."""
    if _OBJC_HEADER.search(head):
        return "Objective-C"
    if _CPP_HEADER.search(head):
        return "C++"
    return "C"


# Extensions several languages use: content decides (the first rule that matches).
_TS_XML = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*<(?:\?xml|!DOCTYPE TS|TS\b)")
_OBJC = re.compile(rb"^\s*(?:@(?:interface|implementation|protocol|import|end)\b|#import\b)",
                   re.M)
_MATLAB = re.compile(rb"^\s*(?:function\b|%)", re.M)
_PROLOG = re.compile(rb"^\s*:-|^[a-z]\w*\([^)]*\)\s*:-", re.M)
_PHP_OPEN = re.compile(rb"<\?(?:php|=)")


def ambiguous_language(suffix: str, head: bytes) -> str | None:
    """Content heuristics for extensions more than one language uses; None when the
    extension is not ambiguous (the table answers)."""
    if suffix == ".h":
        return header_language(head)
    if suffix == ".ts":
        return "XML" if _TS_XML.match(head) else "TypeScript"  # Qt translation files
    if suffix == ".m":
        if _OBJC.search(head):
            return "Objective-C"
        return "MATLAB" if _MATLAB.search(head) else "Objective-C"
    if suffix == ".pl":
        return "Prolog" if _PROLOG.search(head) and b"use strict" not in head else "Perl"
    if suffix == ".inc":
        return "PHP" if _PHP_OPEN.search(head) else None
    return None


def detect_code_language(path: str, head: bytes = b"", tail: bytes = b"") -> str | None:
    """Language of the file at `path`, or None if unknown.

    `head` should hold the first few kilobytes and `tail` the last one or two (a
    modeline may sit in the last 5 lines; with no `tail`, only the head's modeline
    counts). Order: modeline, file name, extension (content heuristics for ambiguous
    ones), shebang. Linguist puts the shebang before the extension; here a known
    extension wins, as it does in The Stack's labels: `bin.d.ts` starting with
    `#!/usr/bin/env node` is TypeScript syntax, and the syntax stage must parse it so.
    """
    language = modeline_language(head, tail) if head else None
    if language:
        return language
    name = PurePosixPath(path).name
    if name in FILENAMES:
        return FILENAMES[name]
    suffix = PurePosixPath(name).suffix
    if suffix in _AMBIGUOUS:
        language = ambiguous_language(suffix, head)
    language = language or EXTENSIONS.get(suffix) or EXTENSIONS.get(suffix.lower())
    if language:
        return language
    if head.startswith(b"#!"):
        return interpreter_language(head)
    return None


_AMBIGUOUS = frozenset((".h", ".ts", ".m", ".pl", ".inc"))
