"""Real parsers as oracles: does the language's own tool accept these bytes?

- Python 3: `compile()` in process;
- Shell: `bash -O extglob -n` (bash-completion and many scripts enable extglob);
- JavaScript: `node --check` (as a CommonJS file, else as a module: whichever
  accepts the original is used for its copies);
- C, C++: `gcc -fsyntax-only` (`-x c`, `-x c++ -std=gnu++17`);
- PHP: `php -l`, Ruby: `ruby -c`, from Debian's php8.2-cli and ruby3.1 packages
  unpacked without root (ORACLE_ROOT; `apt-get download` + `dpkg -x`).
Other languages have none here (Java, Go, Rust, TypeScript, TSX, C#, HTML, CSS, JSON):
their damaged copies count by construction.

An oracle answers True (accepted), False (rejected) or None (cannot judge: a tool
missing, or a timeout).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

ORACLE_ROOT = Path(os.environ.get("LEMUR_DATA_ORACLES",
                                  Path.home() / ".cache" / "lemur-data" / "oracles"))
_LIBS = str(ORACLE_ROOT / "usr/lib/x86_64-linux-gnu")


def _run(command: list[str], data: bytes, suffix: str, env: dict | None = None) -> bool | None:
    with tempfile.NamedTemporaryFile(suffix=suffix) as handle:
        handle.write(data)
        handle.flush()
        try:
            done = subprocess.run([*command, handle.name], capture_output=True, timeout=30,
                                  env=env, cwd=tempfile.gettempdir())
        except (OSError, subprocess.TimeoutExpired):
            return None
    return done.returncode == 0


def python3(data: bytes) -> bool | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(data, "<oracle>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
    return True


def bash(data: bytes) -> bool | None:
    return _run(["bash", "-O", "extglob", "-n"], data, ".sh")


def node(data: bytes, module: bool = False) -> bool | None:
    return _run(["node", "--check"], data, ".mjs" if module else ".cjs")


def gcc(data: bytes, cpp: bool = False) -> bool | None:
    language = ["-x", "c++", "-std=gnu++17"] if cpp else ["-x", "c"]
    return _run(["gcc", "-fsyntax-only", "-w", *language], data, ".cc" if cpp else ".c")


def php(data: bytes) -> bool | None:
    binary = ORACLE_ROOT / "usr/bin/php8.2"
    if not binary.is_file():
        return None
    return _run([str(binary), "-n", "-l"], data, ".php", {"LD_LIBRARY_PATH": _LIBS})


def ruby(data: bytes) -> bool | None:
    binary = ORACLE_ROOT / "usr/bin/ruby3.1"
    if not binary.is_file():
        return None
    return _run([str(binary), "--disable-gems", "-c"], data, ".rb",
                {"LD_LIBRARY_PATH": _LIBS})


ORACLES: dict[str, Callable[[bytes], bool | None]] = {
    "Python": python3, "Shell": bash, "JavaScript": node, "C": gcc,
    "C++": lambda data: gcc(data, cpp=True), "PHP": php, "Ruby": ruby,
}


def for_file(language: str, original: bytes) -> Callable[[bytes], bool | None] | None:
    """The oracle that accepts `original` (so its verdict on copies means something),
    or None: no oracle for the language, or it rejects the real file (a header that
    needs its include path, Python 2, an ES module read as CommonJS...)."""
    oracle = ORACLES.get(language)
    if oracle is None:
        return None
    if oracle(original):
        return oracle
    if language == "JavaScript" and node(original, module=True):
        return lambda data: node(data, module=True)
    return None
