"""Balance: what a file leaves unclosed, a signal independent of the grammar.

Real files close what they open; cut, line-deleted and bracket-dropped copies do
not. Where a grammar errs on valid code (C and C++ macros) this is the signal that
decides; where a grammar is too lenient (PHP reads a file that lost its `<?php` as
text) it catches what the grammar lets through. Pure: bytes in, a count out. Each
language's lexer is one regex substitution (hiding comments, strings and the like)
and a bracket count at C speed; Shell's lexer has its own file (syntax_shell). A
comment, string or heredoc still open at the end of the file counts one too.
"""

from __future__ import annotations

import functools
import re

from .preprocessor import PREPROCESSED
from .shell import shell_imbalance

# What hides brackets from the count: comments, strings, char literals (and in C,
# preprocessor lines, balanced apart). Unterminated strings stop at the line end, an
# unterminated comment at the file end, so a cut file still lexes. The patterns are
# unrolled (`[^"\\]*(?:\\.[^"\\]*)*`): Python's re runs them several times faster.
_C_HIDING = re.compile(rb"/\*[^*]*(?:\*+[^/*][^*]*)*(?:\*+/|\Z)"
                       rb"|//[^\n\\]*(?:\\.[^\n\\]*)*"
                       rb"|\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*(?:\"|$)"
                       rb"|'[^'\\\n]*(?:\\.[^'\\\n]*)*(?:'|$)", re.S | re.M)
# Two forms the branches above misread, each tried only on files that show it (as a
# regex's first branch, either makes the engine try far more bytes: 5x slower on 5 MB of
# headers, where 3 files of 479 had a raw string):
# - C++11 raw string literals, `R"delim(...)delim"` with an optional encoding prefix (u8,
#   u, U, L): their content is not code, and the quotes and brackets in it threw the
#   count (pyarrow's json/test_common.h, `R"({")"`, read as the string `"({"` and then
#   code: 31 unbalanced, a valid header removed). C++ only.
# - digit separators (C++14, C23: `0xffe0'0000'0000'0000ull`), whose quotes the char
#   literal branch took for literals running to the line end (libstdc++'s simd_x86.h:
#   53 unbalanced). A number starts a word (`u8'a'` is a char literal). Files are
#   picked by a quote and three hex digits (`'0000`), which a char literal never shows:
#   a scan from quote to quote, 0.6 ms/MB against 8 for any digit, quote, digit.
_RAW_STRING = rb'(?<![A-Za-z0-9_])(?:u8|[uUL])?R"([^()\\ \t\n"]{0,16})\(.*?(?:\)\1"|\Z)'
_SEPARATED_NUMBER = rb"\b[0-9][0-9A-Za-z_.]*(?:'[0-9A-Za-z_.]+)+"
_HAS_SEPARATOR = re.compile(rb"'[0-9A-Fa-f]{3}")
_RAW_OPENER = re.compile(rb'(?:u8|[uUL])?R"([^(]*)\(')  # and its delimiter


@functools.cache
def _c_hiding(raw_strings: bool, separators: bool) -> re.Pattern[bytes]:
    branches = [*([_RAW_STRING] if raw_strings else []),
                *([_SEPARATED_NUMBER] if separators else []), _C_HIDING.pattern]
    return re.compile(b"|".join(branches), re.S | re.M)


# A directive line (continued by `\`), found once comments and strings are hidden. It
# starts at its newline (the text gets one in front): a literal the regex engine skips
# to, where `^` in multiline mode would be tried at every byte.
_DIRECTIVE_LINE = re.compile(rb"(\n[ \t]*\#[^\n\\]*(?:\\.[^\n\\]*)*)", re.S)
_CSS_HIDING = re.compile(rb"/\*[^*]*(?:\*+[^/*][^*]*)*(?:\*+/|\Z)"
                         rb"|\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*(?:\"|$)"
                         rb"|'[^'\\\n]*(?:\\.[^'\\\n]*)*(?:'|$)", re.S | re.M)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"{}()[]")
_CLOSER_OF = {ord("{"): ord("}"), ord("("): ord(")"), ord("["): ord("]")}
_BRACKET_PAIRS = ((b"{", b"}"), (b"(", b")"), (b"[", b"]"))


def bracket_imbalance(code: bytes) -> int:
    """Brackets in `code` without a partner, in nesting order (`(]` counts 2)."""
    seq = code.translate(None, _NOT_BRACKET)
    # Peeling adjacent pairs runs at C speed; a deeply nested rest goes to the stack.
    for _ in range(32):
        peeled = seq.replace(b"()", b"").replace(b"[]", b"").replace(b"{}", b"")
        if len(peeled) == len(seq):
            return len(seq)
        seq = peeled
    stack: list[int] = []
    unmatched = 0
    for byte in seq:
        if byte in _CLOSER_OF:
            stack.append(_CLOSER_OF[byte])
        elif stack and stack[-1] == byte:
            stack.pop()
        else:
            unmatched += 1
    return unmatched + len(stack)


def _net_imbalance(code: bytes) -> int:
    return sum(abs(code.count(a) - code.count(b)) for a, b in _BRACKET_PAIRS)


def _open_at_end(hiding: re.Pattern[bytes], data: bytes, visible: bytes) -> int:
    """1 if `data` ends inside a comment, string or heredoc that `hiding` hid, else 0.

    A cut file often ends there (a licence header cut mid-comment), and its brackets
    may still balance: the hiding regex lets what is open run to the end so the file
    lexes. Cheap on real files: the last hidden span reaches the end only if the
    text, newlines aside, ends with its blank replacement, and it is open only if
    the file does not end with `*/` or a quote; only then is the file lexed again
    to find that span.
    """
    if visible[-256:].rstrip(b"\r\n")[-1:] != b" ":  # (a slice: no copy of the file)
        return 0
    tail = data[-256:].rstrip()[-3:]
    if tail[-2:] == b"*/" or (tail[-1:] in b"\"'`" and tail[-2:-1] != b"\\"):
        return 0  # `#endif /* GUARD */`: what ends the file is closed
    last = None
    for last in hiding.finditer(data):  # noqa: B007 (the last one is what we want)
        pass
    if last is None or data[last.end():].strip():
        return 0
    span = last.group()
    if raw := _RAW_OPENER.match(span):  # a C++ raw string: `)delim"` closes it
        return int(not span.endswith(b")" + raw.group(1) + b'"'))
    if span[:2] == b"/*":
        return int(len(span) < 4 or span[-2:] != b"*/")
    if span[:3] == b"<<<":  # PHP: a heredoc opener whose body never closed
        return 1
    quote = span[:1]
    if quote in (b'"', b"'", b"`"):
        escapes = len(span[1:-1]) - len(span[1:-1].rstrip(b"\\"))
        return int(len(span) < 2 or span[-1:] != quote or escapes % 2 == 1)
    return 0


def c_imbalance(data: bytes, raw_strings: bool = False) -> int:
    """Brackets of the code, and of the macro definitions counted apart.

    Macro bodies count by net total only: `BEGIN_NAMESPACE {` and `END_NAMESPACE }`
    are unbalanced one by one and balanced together. `data` has the not-taken `#if`
    branches blanked (`mask_preprocessor`), so a bracket opened in both counts once.
    `raw_strings`: C++, whose raw string literals are hidden too.
    """
    hiding = _c_hiding(raw_strings and b'R"' in data, _HAS_SEPARATOR.search(data) is not None)
    visible = hiding.sub(b" ", data)
    unclosed = _open_at_end(hiding, data, visible)
    if b"#" not in visible:
        return bracket_imbalance(visible) + unclosed
    parts = _DIRECTIVE_LINE.split(b"\n" + visible)  # code, directive, code, ...
    return (bracket_imbalance(b"".join(parts[::2])) + _net_imbalance(b"".join(parts[1::2]))
            + unclosed)




# Elements whose end tag HTML requires (WHATWG HTML, 13.1.2.4 "Optional tags": `</p>`,
# `</li>`, `</td>`... may be implied, and so may `</html>`, `</head>` and `</body>`; void
# elements such as `<br>` have none). What the HTML parsing algorithm reports at the end
# of the file is such an element still open ("expected-closing-tag-but-got-eof" in
# html5lib). Not counted: an end tag with no open element, which browsers ignore (old
# documentation pages close a `</ul>` or `</body>` never opened), and the formatting
# elements (13.2.4.3: `a`, `b`, `font`, `tt`...), which the parser's adoption agency
# closes and reopens around blocks (`<a name=x>` never closed, in pages of the 1990s).
ALWAYS_CLOSED = frozenset(
    b"title div span table form select textarea script style pre "
    b"ul ol dl blockquote section nav header footer main article aside iframe svg "
    b"button label h1 h2 h3 h4 h5 h6 sup sub kbd var samp abbr cite center".split())


_TAG_START = re.compile(rb"<[!/?a-zA-Z]")


def html_cut_in_markup(data: bytes) -> int:
    """1 where the file ends inside a tag (a `<name` or `</` with no `>` after it) or
    inside a comment (`<!--` without its `-->`), as a file cut mid-markup does (html5lib's
    "eof-in-tag-name", "eof-in-attribute-value-...", "eof-in-comment"); else 0. A `<`
    followed by a space or digit is text to HTML."""
    tail = data[data.rfind(b">") + 1:]
    if _TAG_START.search(tail):
        return 1
    return int(data.rfind(b"<!--") > data.rfind(b"-->"))


# Comments and raw-text elements as one match each (their content holds no tags), else
# one start or end tag of an ALWAYS_CLOSED element (other tags are not matched at all:
# the loop below then runs on a fraction of a page's tags). Matched against the
# lower-cased bytes (HTML's tag names are ASCII-case-insensitive): a case-sensitive
# pattern runs 1.4x faster than `re.I`, and `findall`'s tuples cost less than match
# objects (html_unclosed: 2x faster, about a tenth of a tree-sitter-html parse).
_HTML_TOKENS = re.compile(
    rb"<!--.*?(?:-->|\Z)|<(script|style|textarea|title)\b[^>]*>.*?(?:(</\1\s*>)|\Z)"
    rb"|<(/?)(" + b"|".join(sorted(ALWAYS_CLOSED - {b"script", b"style", b"textarea", b"title"},
                                   key=len, reverse=True))
    + rb")(?![a-zA-Z0-9])", re.S)


def html_unclosed(data: bytes) -> int:
    """Elements whose end tag HTML requires (ALWAYS_CLOSED) left open, in document order as
    the HTML parsing algorithm closes them: an end tag closes the innermost open element
    of its name and every element opened inside it (each of those counts one, as the
    algorithm reports a parse error for it); an end tag with no open element of its name
    is ignored; what is open at the end counts one each. Comments and the bodies of
    `script`, `style`, `textarea` and `title` are skipped (a raw-text element never closed
    counts one)."""
    stack: list[bytes] = []
    unclosed = 0
    for raw, closed, slash, name in _HTML_TOKENS.findall(data.lower()):
        if raw:
            unclosed += not closed  # a raw-text element cut by the end of the file
        elif not name:
            continue  # a comment
        elif not slash:
            stack.append(name)
        elif name in stack:
            depth = len(stack) - 1 - stack[::-1].index(name)
            unclosed += len(stack) - 1 - depth
            del stack[depth:]
    return unclosed + len(stack)


# --- PHP: code brackets, and braces of the inline HTML ------------------------------
# What hides brackets in PHP code: comments (`#[` is an attribute, and `?>` ends a
# line comment as it ends the code), quoted and backquoted strings (`{$a["k"]}` may
# nest quotes in "..."), heredoc and nowdoc bodies (PHP 7.3: the closing name may be
# indented), and inline HTML from `?>` to the next open tag. What is left open at the
# end runs to the end, so a cut file still lexes. Every branch starts with a literal
# (no group around `//` and `#`): the regex engine then skips to candidate bytes,
# four times faster.
_PHP_HIDING = re.compile(rb"""
 /\*[^*]*(?:\*+[^/*][^*]*)*(?:\*+/|\Z)
|//[^\n?]*(?:\?(?!>)[^\n?]*)*
|\#(?!\[)[^\n?]*(?:\?(?!>)[^\n?]*)*
|'[^'\\]*(?:\\.[^'\\]*)*(?:'|\Z)
|"[^"\\{]*(?:(?:\\.|\{\$[^}]*\}|\{)[^"\\{]*)*(?:"|\Z)
|`[^`\\]*(?:\\.[^`\\]*)*(?:`|\Z)
|<<<[ \t]*(?P<quote>["']?)(?P<name>[A-Za-z_\x80-\xff][\w\x80-\xff]*)(?P=quote)\r?\n
   (?:.*?\n)??[ \t]*(?P=name)(?![\w\x80-\xff])
|<<<[^\n]*
|\?>.*?(?:<\?(?:php|=)?|\Z)
""", re.S | re.X)
_PHP_OPEN = re.compile(rb"<\?(?:php|=)?")
_NOT_BRACE = bytes(b for b in range(256) if b not in b"{}")


# PHP code at a line start: what a file that lost its `<?php` line still shows. A page
# that is all HTML starts with `<`; its scripts may hold `function f(`, so the rule
# only applies to files that do not.
_PHP_CODE_LINE = re.compile(rb"""\n[ \t]*(?:namespace[ \t]+[\w\\]+[ \t]*[;{]
|use[ \t]+[\w\\]+(?:[ \t]+as[ \t]+\w+)?[ \t]*;
|declare[ \t]*\([ \t]*strict_types
|(?:(?:abstract|final)[ \t]+)?(?:class|interface|trait)[ \t]+\w+[^;{\n]*\n?[ \t]*\{
|(?:(?:public|private|protected|static)[ \t]+)*function[ \t]+&?\w+[ \t]*\(
|\$\w+[ \t]*(?:\[[^\]\n]*\])?[ \t]*=[^=>][^\n]*;[ \t]*\r?(?=\n))""", re.X)


def _tagless_code(data: bytes) -> int:
    """1 if a file without a PHP open tag reads as PHP code (lost its `<?php` line)."""
    if data.lstrip()[:1] == b"<":
        return 0
    return 1 if _PHP_CODE_LINE.search(b"\n" + data) else 0


def _brace_imbalance(html: bytes) -> int:
    return abs(html.count(b"{") - html.count(b"}"))


def php_imbalance(data: bytes) -> int:
    """Brackets of the PHP code without a partner, plus braces of the inline HTML
    (around and between the PHP tags) that do not pair up by count.

    Code and HTML count apart: `<?php if ($a) { ?> ... <?php } ?>` balances in the
    code; CSS and scripts in the HTML balance their braces (HTML text seldom holds a
    lone brace; a lone `)` in prose is common, so only braces count there). A file
    with no open tag is all HTML to PHP, and valid: counting its braces, and lines
    of PHP code in a file that does not start with a tag, is what tells a page from
    code that lost its `<?php` line.
    """
    opened = _PHP_OPEN.search(data)
    if opened is None:
        return _brace_imbalance(data) + _tagless_code(data)
    html = data[:opened.start()]
    code = data[opened.end():]
    if b"?>" in code:  # inline HTML after the first block (files ending `?>` too)
        html += b"".join(m.group().translate(None, _NOT_BRACE)
                         for m in _PHP_HIDING.finditer(code) if m.group()[:2] == b"?>")
    visible = _PHP_HIDING.sub(b" ", code)
    return (bracket_imbalance(visible) + _brace_imbalance(html)
            + _open_at_end(_PHP_HIDING, code, visible))


def lexical_imbalance(language: str, data: bytes) -> int:
    """Unmatched openers and closers in `data` (after `syntax_mask.prepare`); 0 for
    languages without a rule (HTML counts its tags on the tree, in syntax_check)."""
    if language in PREPROCESSED:
        return c_imbalance(data, raw_strings=language == "C++")
    if language == "PHP":
        return php_imbalance(data)
    if language == "CSS":
        visible = _CSS_HIDING.sub(b" ", data)
        return bracket_imbalance(visible) + _open_at_end(_CSS_HIDING, data, visible)
    if language == "Shell":
        return shell_imbalance(data)
    return 0
