"""Real source files per language for calibrating the syntax stage, and damaged copies.

Where the files come from (all real, none written by us): the fixtures of
`tests/fixtures/fetch.py` (`python tests/fixtures/fetch.py` fetches them), pinned
Debian Bookworm packages that ship source (Debian's Python 3.11 standard library,
openjdk-17-source's src.zip, golang-1.19-src, librust-*-dev crates, php-*, ruby-*,
node-typescript, libc, kernel, OpenSSL, libstdc++ and Boost headers, shell scripts of
gzip, debianutils, xdg-utils and ucf, HTML and CSS documentation),
npm packages (npm itself, rxjs, TanStack: JavaScript, JSON, HTML, TypeScript, TSX) and
pythonnet's sdist from PyPI (C#).

Lists in `files/<Language>.txt` name the sampled files as `fixture:path/in/fixture`
(zip members as `archive.zip!member`), so they resolve on any machine that fetched
the fixtures. `sample_files.py` writes them.
"""

from __future__ import annotations

import bisect
import functools
import os
import random
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lemur_data.filters.langid.code import detect_code_language
from tests.fixtures import resolve

HERE = Path(__file__).resolve().parent
LISTS = HERE / "files"

MIN_BYTES, MAX_BYTES = 200, 256 * 1024


@dataclass(frozen=True)
class Root:
    """A folder (or zip) of a fixture to draw files of one language from."""

    path: str  # fixture:relative/path
    language: str
    exclude: tuple[str, ...] = ()
    forced: bool = False  # every file is `language`, whatever its name says (C++ headers)
    shebang_only: bool = False  # scripts without extension: language from `#!` only


RUST = tuple(f"librust-{crate}-dev" for crate in (
    "regex", "serde", "syn", "tokio", "libc", "winapi", "rayon", "rayon-core", "hashbrown", "bytes",
    "crossbeam-channel", "petgraph", "mio", "indexmap", "rand", "parking-lot", "getrandom",
    "pin-project-lite"))
PHP = ("php-symfony-console", "php-monolog", "php-guzzlehttp-psr7", "php-twig",
       "php-league-commonmark")
RUBY = ("ruby-rack", "ruby-thor", "ruby-rspec-core", "ruby-i18n", "ruby-sinatra")
TESTS_RUBY = ("/test/", "/spec/fixtures")
SHELL_BIN = ("gzip:bin", "debianutils:bin", "debianutils:sbin", "debianutils:usr/bin",
             "debianutils:usr/sbin", "xdg-utils:usr/bin", "ucf:usr/bin")
TANSTACK = ("@tanstack/react-query:package", "@tanstack/react-router:package")

# Intentionally broken test inputs (badsyntax_*.py, Go testdata) are excluded:
# they would count against the grammar for files that are meant not to parse.
ROOTS: list[Root] = [
    *(Root(f"{name}:usr/lib/python3.11", "Python", ("/test/", "/lib2to3/", "/idlelib/"))
      for name in ("libpython3.11-minimal", "libpython3.11-stdlib")),
    *(Root(f"{name}:usr/include", "C") for name in ("linux-libc-dev", "libc6-dev", "libssl-dev")),
    Root("golang-1.19-src:usr/share/go-1.19/misc/cgo", "C"),
    Root("libstdc++-12-dev:usr/include/c++/12", "C++", forced=True),
    Root("libboost1.74-dev:usr/include/boost", "C++"),
    Root("openjdk-17-source:usr/lib/jvm/openjdk-17/lib/src.zip", "Java"),
    Root("golang-1.19-src:usr/share/go-1.19/src", "Go", ("/testdata/",)),
    *(Root(f"{name}:usr/share/cargo/registry", "Rust") for name in RUST),
    *(Root(f"{name}:usr/share/php", "PHP") for name in PHP),
    Root("libruby3.1:usr/lib/ruby", "Ruby", TESTS_RUBY),
    *(Root(f"{name}:usr/share/rubygems-integration", "Ruby", TESTS_RUBY) for name in RUBY),
    *(Root(folder, "Shell", shebang_only=True) for folder in SHELL_BIN),
    Root("golang-1.19-src:usr/share/go-1.19", "Shell", ("/testdata/",)),
    Root("npm:package", "JavaScript", ("/test/",)),
    Root("libjs-jquery:usr/share/javascript", "JavaScript"),
    Root("node-typescript:usr/share/nodejs", "JavaScript"),
    Root("rxjs:package", "TypeScript"),
    *(Root(folder, "TypeScript", ("/__tests__/",)) for folder in TANSTACK),
    Root("node-typescript:usr/share/nodejs/typescript", "TypeScript"),
    *(Root(folder, "TSX") for folder in TANSTACK),
    Root("pythonnet:", "C#", ("/tests/",)),
    Root("npm:package/docs", "HTML"),
    Root("libxslt1-dev:usr/share/doc", "HTML"),
    Root("nodejs-doc:usr/share/doc", "HTML"),
    Root("source-highlight:usr/share", "CSS"),
    Root("nodejs-doc:usr/share", "CSS"),
    Root("libxslt1-dev:usr/share", "CSS"),
    Root("libruby3.1:usr/lib/ruby", "CSS"),
    Root("npm:package", "JSON"),
    Root("node-typescript:usr/share/nodejs", "JSON"),
]

LANGUAGES = ["Python", "JavaScript", "TypeScript", "TSX", "Java", "C", "C++", "C#", "Go",
             "Rust", "PHP", "Ruby", "Shell", "HTML", "CSS", "JSON"]


def expand(entry: str) -> str:
    """The path of a `fixture:path` entry (fails the test when the fixture is missing)."""
    return os.path.normpath(resolve(entry))


@functools.lru_cache(maxsize=4)
def _zip(archive: str) -> tuple[zipfile.ZipFile, frozenset[str]]:
    """An open archive and its member names: src.zip holds 15,000 files, read once."""
    zipped = zipfile.ZipFile(archive)
    return zipped, frozenset(zipped.namelist())


def read(entry: str) -> bytes:
    """Bytes of a listed entry: a file path or `archive.zip!member`."""
    path = expand(entry)
    if "!" in path:
        archive, member = path.split("!", 1)
        return _zip(archive)[0].read(member)
    return Path(path).read_bytes()


def exists(entry: str) -> bool:
    path = expand(entry)
    if "!" in path:
        archive, member = path.split("!", 1)
        return Path(archive).is_file() and member in _zip(archive)[1]
    return Path(path).is_file()


def _language_of(root: Root, name: str, head: bytes) -> str | None:
    if root.forced:
        return root.language
    if root.shebang_only:
        return detect_code_language("", head) if head.startswith(b"#!") else None
    return detect_code_language(name, head)


def candidates(root: Root) -> Iterator[str]:
    """Listable entries of `root` in `root.language`, sorted, within the size bounds."""
    base = expand(root.path)
    placeholder = root.path
    if base.endswith(".zip"):
        if not Path(base).is_file():
            return
        with zipfile.ZipFile(base) as zipped:
            for info in sorted(zipped.infolist(), key=lambda i: i.filename):
                if (MIN_BYTES <= info.file_size <= MAX_BYTES
                        and detect_code_language(info.filename) == root.language):
                    yield f"{placeholder}!{info.filename}"
        return
    found: list[str] = []
    for folder, dirs, files in os.walk(base):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            relative = path[len(base):]
            if any(part in relative for part in root.exclude) or os.path.islink(path):
                continue
            try:
                size = os.path.getsize(path)
                if not MIN_BYTES <= size <= MAX_BYTES:
                    continue
                with open(path, "rb") as handle:
                    head = handle.read(4096)
            except OSError:
                continue
            if _language_of(root, name, head) == root.language and _is_text(head):
                found.append(placeholder + (relative.lstrip("/") if placeholder.endswith(":")
                                            else relative))
        if root.shebang_only:
            break  # a bin folder: its top level only
    yield from found


def _is_text(head: bytes) -> bool:
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start > len(head) - 4  # a character cut by the 4 KB window
    return True


def list_path(language: str) -> Path:
    return LISTS / f"{language.replace('#', 'sharp').replace('+', 'p')}.txt"


def listed(language: str) -> list[str]:
    lines = list_path(language).read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


# --- damaged copies ------------------------------------------------------------------
# Each damage is made so that the copy is invalid by construction: a random edit
# can leave valid code (a cut between two statements, a deleted comment line),
# and no syntax checker should be blamed for missing those.

CLOSERS: dict[str, frozenset[str]] = {
    "(": frozenset({")"}), "[": frozenset({"]"}), "{": frozenset({"}"}),
    "$(": frozenset({")"}), "${": frozenset({"}"}), "<": frozenset({">", "/>"}),
    "def": frozenset({"end"}), "class": frozenset({"end"}), "module": frozenset({"end"}),
    "do": frozenset({"end", "done"}), "begin": frozenset({"end"}),
    "if": frozenset({"end", "fi"}), "case": frozenset({"end", "esac"}),
}
BRACKETS = frozenset({"(", ")", "[", "]", "{", "}"})
DAMAGES = ("cut", "delete_lines", "drop_bracket")


@dataclass(frozen=True)
class Pair:
    """An opening token and its closing token, as the grammar paired them."""

    open_start: int
    open_end: int
    close_start: int


def pairs_and_brackets(root) -> tuple[list[Pair], list[int]]:  # root: tree_sitter.Node
    """Every opener/closer pair, and the start bytes of one-byte bracket tokens."""
    pairs: list[Pair] = []
    brackets: list[int] = []
    cursor = root.walk()
    while True:
        node = cursor.node
        if node.child_count == 0:
            if node.type in BRACKETS and node.end_byte - node.start_byte == 1:
                brackets.append(node.start_byte)
        else:
            first, last = node.children[0], node.children[-1]
            if (first.child_count == 0 and last.child_count == 0 and not last.is_missing
                    and last.type in CLOSERS.get(first.type, ())):
                pairs.append(Pair(first.start_byte, first.end_byte, last.start_byte))
            cursor.goto_first_child()
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return pairs, brackets


def _rng(entry: str, damage: str) -> random.Random:
    return random.Random(f"{entry}\x00{damage}")


def cut(data: bytes, pairs: list[Pair], rng: random.Random) -> bytes | None:
    """Cut in the middle half of the file, inside a pair whose closer is cut away."""
    low, high = len(data) // 4, 3 * len(data) // 4
    spans = [(max(p.open_end, low), min(p.close_start, high)) for p in pairs]
    spans = [(a, b) for a, b in spans if a < b]
    if not spans:
        return None
    a, b = rng.choice(spans)
    return data[: rng.randrange(a, b)]


def delete_lines(data: bytes, pairs: list[Pair], rng: random.Random) -> bytes | None:
    """10% of the non-blank lines deleted, one of them a line that opens a pair
    closed on a later line (and closes nothing), none of them a line that closes
    one, so the forced opener's closer is left unmatched: the copy cannot balance."""
    starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    lines = data.splitlines(keepends=True)
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    if len(nonblank) < 10:
        return None  # a one-line (minified) file: deleting lines leaves nothing

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset) - 1

    opens: dict[int, int] = {}
    closes: set[int] = set()
    for pair in pairs:
        o, c = line_of(pair.open_start), line_of(pair.close_start)
        if o != c:
            opens[o] = opens.get(o, 0) + 1
            closes.add(c)
    openers = sorted(line for line in opens if line not in closes)
    if not openers:
        return None
    forced = rng.choice(openers)
    # Lines that close a multi-line pair stay: deleting one (a CSS rule's `}`) next to
    # the forced opener (the following rule's `.name {`) merges two blocks into one
    # valid block, and the copy would not be broken as promised.
    others = [i for i in nonblank if i != forced and i not in closes]
    gone = {forced, *rng.sample(others, min(len(others), max(0, len(nonblank) // 10 - 1)))}
    # The forced line's closer stays, so the copy has a closer with no opener.
    return b"".join(line for i, line in enumerate(lines) if i not in gone)


def drop_bracket(data: bytes, brackets: list[int], rng: random.Random) -> bytes | None:
    """One bracket token (per the grammar, not one inside a string or comment) removed."""
    if not brackets:
        return None
    at = rng.choice(brackets)
    return data[:at] + data[at + 1:]


def damaged(entry: str, data: bytes, root,
            found: tuple[list[Pair], list[int]] | None = None) -> dict[str, bytes | None]:
    """The three damaged copies of one file (None when a damage does not apply).

    `root` is the tree of `data` (offsets must match); `found`: its
    `pairs_and_brackets`, if the caller has them already.
    """
    pairs, brackets = found if found is not None else pairs_and_brackets(root)
    return {
        "cut": cut(data, pairs, _rng(entry, "cut")),
        "delete_lines": delete_lines(data, pairs, _rng(entry, "delete_lines")),
        "drop_bracket": drop_bracket(data, brackets, _rng(entry, "drop_bracket")),
    }
