"""Real parsers as oracles: does the language's own tool accept these bytes?

- Python 3: `compile()` in process;
- Shell: `bash -O extglob -n` (bash-completion and many scripts enable extglob);
- JavaScript: `node --check` (as a CommonJS file, else as a module: whichever
  accepts the original is used for its copies);
- C, C++: `gcc -fsyntax-only` (`-x c`, `-x c++ -std=gnu++17`);
- PHP: `php -l`, Ruby: `ruby -c`, from Debian's php8.2-cli and ruby3.1 (+ libruby3.1);
- Go: `gofmt -e` (Go's own parser, golang-1.19-go);
- Rust: `rustfmt` reading stdin (rustc's parser; no module files are loaded), in the
  2021 edition, else 2015, whichever accepts the original;
- TypeScript: TypeScript 5.6's own parser (`ts.createSourceFile`, its parse
  diagnostics), one node process for all files;
- HTML: html5lib, the WHATWG parsing algorithm browsers run. A browser accepts any
  bytes; what it reports as a parse error and the damage breaks is an element whose
  end tag is required still open at the end of the file, or the file ending inside a
  tag, attribute or comment (`html`). Stray end tags, bad attributes and the rest
  are errors browsers recover from, not counted.
CSS has none: a CSS parser (tinycss2, as browsers) accepts a file with a `}` dropped
or cut mid-rule as it accepts the original; its copies count by construction.
The tools come from Debian and npm, unpacked without root by
`python tests/fixtures/fetch.py --oracles`. Java has none here: javac compiles,
and a file alone does not compile without its classpath; its copies count by
construction.

An oracle answers True (accepted), False (rejected) or None (cannot judge: a
timeout). A tool that was not fetched is an error naming the fetch command.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

from tests.fixtures.fetch import cache_dir, folder_name, is_fetched


def tool(name: str, path: str) -> Path:
    """A file of oracle package `name` (tests/fixtures/fetch.py ORACLE_*)."""
    if not is_fetched(name):
        raise SystemExit(f"oracle {name!r} is missing: run "
                         "`python tests/fixtures/fetch.py --oracles`")
    return cache_dir() / folder_name(name) / path


def _libs() -> dict[str, str]:
    return {"LD_LIBRARY_PATH": str(tool("libruby3.1", "usr/lib/x86_64-linux-gnu"))}


def _stdin(command: list[str], data: bytes) -> bool | None:
    try:
        done = subprocess.run(command, input=data, capture_output=True, timeout=30,
                              cwd=tempfile.gettempdir())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.returncode == 0


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


# Elements HTML lets a document leave open (WHATWG HTML 13.1.2.4, "Optional tags", as
# html5lib's end-of-file check lists them) and the formatting elements the parser's
# adoption agency closes and reopens (13.2.4.3).
HTML_IMPLIED = frozenset(("html", "head", "body", "p", "li", "dd", "dt", "rb", "rp", "rt",
                          "rtc", "option", "optgroup", "colgroup", "caption", "thead",
                          "tbody", "tfoot", "tr", "td", "th"))
HTML_FORMATTING = frozenset(("a", "b", "big", "code", "em", "font", "i", "nobr", "s",
                             "small", "strike", "strong", "tt", "u"))
# html5lib's codes for a file that ends inside a tag, attribute, comment or doctype;
# the elements still open are read from the tree instead of its EOF error.
_HTML_CUT = ("eof-in-", "expected-attribute-name-but-got-eof",
             "expected-attribute-value-but-got-eof", "expected-end-of-tag-name-but-got-eof",
             "unexpected-EOF-after-solidus-in-tag", "expected-named-closing-tag-but-got-eof",
             "expected-doctype-name-but-got-eof", "expected-numeric-entity-but-got-eof")


def html(data: bytes) -> bool | None:
    """False where html5lib, at the end of the file, holds open an element whose end
    tag HTML requires (`div`, `table`, `pre`...; not `p`, `li`, `body` nor `a`, `b`), or
    the file ends inside a tag, attribute or comment. Stray end tags, bad attributes and
    the rest are errors browsers recover from."""
    import html5lib

    parser = html5lib.HTMLParser(strict=False)
    parser.parse(data)
    if any(code.startswith(_HTML_CUT) for _, code, _ in parser.errors):
        return False
    return all(element.name in HTML_IMPLIED or element.name in HTML_FORMATTING
               for element in parser.tree.openElements)


def bash(data: bytes) -> bool | None:
    return _run(["bash", "-O", "extglob", "-n"], data, ".sh")


def node(data: bytes, module: bool = False) -> bool | None:
    return _run(["node", "--check"], data, ".mjs" if module else ".cjs")


def gcc(data: bytes, cpp: bool = False) -> bool | None:
    language = ["-x", "c++", "-std=gnu++17"] if cpp else ["-x", "c"]
    return _run(["gcc", "-fsyntax-only", "-w", *language], data, ".cc" if cpp else ".c")


def php(data: bytes) -> bool | None:
    return _run([str(tool("php8.2-cli", "usr/bin/php8.2")), "-n", "-l"], data, ".php",
                _libs())


def ruby(data: bytes) -> bool | None:
    return _run([str(tool("ruby3.1", "usr/bin/ruby3.1")), "--disable-gems", "-c"], data,
                ".rb", _libs())


def go(data: bytes) -> bool | None:
    return _stdin([str(tool("golang-1.19-go", "usr/lib/go-1.19/bin/gofmt")), "-e"], data)


def rust(data: bytes, edition: str = "2021") -> bool | None:
    return _stdin([str(tool("rustfmt", "usr/bin/rustfmt")), "--emit", "stdout",
                   "--edition", edition], data)


_TS_PARSER = """
const ts = require(process.argv[1]);
const fs = require('fs');
require('readline').createInterface({input: process.stdin}).on('line', (line) => {
  const [path, name] = JSON.parse(line);
  const text = fs.readFileSync(path, 'utf8');
  const kind = name.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const file = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, false, kind);
  process.stdout.write((file.parseDiagnostics.length ? 'err' : 'ok') + '\\n');
});
"""


class TypeScriptParser:
    """TypeScript's own parser in one node process: `node -e` and typescript.js load
    once (half a second), then each file costs a parse. `name` sets the parse's rules
    (`.d.ts`: a declaration file, `.tsx`: JSX)."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None

    def __call__(self, data: bytes, name: str = "x.ts") -> bool | None:
        if self._process is None:
            library = tool("typescript", "package/lib/typescript.js")
            self._process = subprocess.Popen(["node", "-e", _TS_PARSER, str(library)],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        with tempfile.NamedTemporaryFile(suffix=".ts") as handle:
            handle.write(data)
            handle.flush()
            assert self._process.stdin is not None and self._process.stdout is not None
            self._process.stdin.write((json.dumps([handle.name, name]) + "\n").encode())
            self._process.stdin.flush()
            return self._process.stdout.readline().strip() == b"ok"


typescript = TypeScriptParser()


ORACLES: dict[str, Callable[[bytes], bool | None]] = {
    "Python": python3, "Shell": bash, "JavaScript": node, "C": gcc,
    "C++": lambda data: gcc(data, cpp=True), "PHP": php, "Ruby": ruby, "Go": go,
    "Rust": rust, "HTML": html,
}


# Oracles every machine that runs the tests has (in process, or bash, node and gcc):
# the quick calibration test uses only these; the others are fetched for labelling.
SYSTEM = frozenset(("Python", "Shell", "JavaScript", "C", "C++", "HTML"))


def for_file(language: str, original: bytes, name: str = "", fetched: bool = True
             ) -> Callable[[bytes], bool | None] | None:
    """The oracle that accepts `original` (so its verdict on copies means something),
    or None: no oracle for the language (or, with `fetched` false, none among the
    SYSTEM ones), or it rejects the real file (a header that needs its include path,
    Python 2, an ES module read as CommonJS...). `name` is the file's name
    (TypeScript reads `.d.ts` and `.tsx` by their own rules)."""
    if not fetched and language not in SYSTEM:
        return None
    if language == "TypeScript":
        suffix = ".d.ts" if name.endswith(".d.ts") else "." + name.rsplit(".", 1)[-1]
        suffix = suffix if suffix in (".d.ts", ".ts", ".mts", ".cts") else ".ts"
        judge = lambda data: typescript(data, "file" + suffix)  # noqa: E731
        return judge if judge(original) else None
    oracle = ORACLES.get(language)
    if oracle is None:
        return None
    if oracle(original):
        return oracle
    if language == "JavaScript" and node(original, module=True):
        return lambda data: node(data, module=True)
    if language == "Rust" and rust(original, "2015"):
        return lambda data: rust(data, "2015")
    return None
