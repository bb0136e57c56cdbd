"""Syntax validity of one source file, measured with a tree-sitter grammar.

Pure: bytes and a parser in, numbers out. The metric is the share of the
file's bytes that the grammar could not place in a tree (under ERROR nodes)
plus MISSING nodes, which tree-sitter inserts where a token (a closing bracket,
a semicolon) should have been and which span no bytes. Thresholds live in the
stage; here we only measure.

A second signal, independent of the grammar's error recovery, counts what the
file leaves unclosed: brackets outside strings and comments (C, C++, CSS),
`#if`/`#endif` (C, C++), always-closed HTML elements (from the tree's tags),
keywords, brackets, quotes and heredocs (Shell).
Real files balance; cut or damaged copies almost never do.

Grammars come from the official per-language wheels (tree-sitter-python, ...),
never from tree-sitter-language-pack, which downloads grammars at run time.
"""

from __future__ import annotations

import importlib
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Language, Node, Parser, Query, QueryCursor

# The Stack's language name -> (grammar module, function returning the language pointer).
GRAMMARS: dict[str, tuple[str, str]] = {
    "Python": ("tree_sitter_python", "language"),
    "JavaScript": ("tree_sitter_javascript", "language"),
    "TypeScript": ("tree_sitter_typescript", "language_typescript"),
    "TSX": ("tree_sitter_typescript", "language_tsx"),
    "Java": ("tree_sitter_java", "language"),
    "C": ("tree_sitter_c", "language"),
    "C++": ("tree_sitter_cpp", "language"),
    "C#": ("tree_sitter_c_sharp", "language"),
    "Go": ("tree_sitter_go", "language"),
    "Rust": ("tree_sitter_rust", "language"),
    # language_php accepts HTML around `<?php` blocks, as real .php files have.
    "PHP": ("tree_sitter_php", "language_php"),
    "Ruby": ("tree_sitter_ruby", "language"),
    "Shell": ("tree_sitter_bash", "language"),
    "HTML": ("tree_sitter_html", "language"),
    "CSS": ("tree_sitter_css", "language"),
    "JSON": ("tree_sitter_json", "language"),
}


class ParseTimeout(Exception):
    """The parse ran past its time budget and was cancelled."""


@dataclass(frozen=True)
class SyntaxReport:
    """What the grammar made of one file."""

    error_nodes: int
    """Outermost ERROR nodes (nested ones are inside an already counted span)."""
    missing_nodes: int
    """MISSING nodes outside ERROR spans: tokens the parser had to invent."""
    error_bytes: int
    """Bytes under the outermost ERROR nodes (at least one per node)."""
    total_bytes: int
    unbalanced: int = 0
    """Openers and closers left unmatched by the language's balance rule (brackets,
    `#if`/`#endif`, always-closed HTML elements, shell keywords and quotes); 0 where
    the language has none."""

    @property
    def clean(self) -> bool:
        return self.error_nodes == 0 and self.missing_nodes == 0 and self.unbalanced == 0

    @property
    def error_share(self) -> float:
        return self.error_bytes / self.total_bytes if self.total_bytes else 0.0


def load_language(name: str) -> Language:
    """The grammar for a Stack language name; KeyError if we ship none for it."""
    module_name, function = GRAMMARS[name]
    module = importlib.import_module(module_name)
    return Language(getattr(module, function)())


def parse(parser: Parser, data: bytes, timeout_s: float | None = None):  # -> Tree
    """Parse `data`, cancelling after `timeout_s` seconds of parser work.

    tree-sitter 0.26 dropped `timeout_micros`; a progress callback that says
    "stop" is the way to bound a parse, and it only exists for the callback
    form of `parse`. Reading through a memoryview keeps that form zero-copy.
    """
    if timeout_s is None:
        return parser.parse(data)
    view = memoryview(data)
    deadline = time.perf_counter() + timeout_s
    clock = time.perf_counter

    def read(offset: int, _point: object) -> memoryview:
        return view[offset:]

    def past_deadline(_offset: int, _has_error: bool) -> bool:
        return clock() > deadline

    try:
        return parser.parse(read, progress_callback=past_deadline)
    except ValueError as error:  # "Parsing failed": cancelled by the callback
        parser.reset()  # else the next parse would resume this one
        raise ParseTimeout(f"parse exceeded {timeout_s}s") from error


def error_spans(root: Node) -> tuple[list[Node], list[Node]]:
    """Outermost ERROR nodes and MISSING nodes outside them.

    Only subtrees that report `has_error` are visited, so a clean tree costs
    one attribute read and a damaged one only its damaged paths.
    """
    errors: list[Node] = []
    missing: list[Node] = []
    stack = [root] if root.has_error else []
    while stack:
        node = stack.pop()
        if node.is_error:
            errors.append(node)
        elif node.is_missing:
            missing.append(node)
        else:
            stack.extend(child for child in node.children if child.has_error)
    return errors, missing


# Grammar leniencies: tokens a grammar accepts where the language does not. A stray
# `end` in Ruby (its `def` line deleted) ends up at top level, parsed as a call to a
# method named `end`.
# (No `#eq?` predicate: a tree parsed through a read callback keeps no source text,
# and py-tree-sitter 0.26 crashes evaluating text predicates on it.)
_STRAY_KEYWORDS: dict[str, tuple[str, bytes]] = {
    "Ruby": ("(program (identifier) @stray)", b"end"),
}


def measure(root: Node, total_bytes: int, strays: Sequence[Node] = (),
            unbalanced: int = 0) -> SyntaxReport:
    """The report for a parsed tree; `strays` are nodes to count as errors too."""
    errors, missing = error_spans(root)
    errors += strays
    return SyntaxReport(
        error_nodes=len(errors),
        missing_nodes=len(missing),
        # An ERROR node can be empty; it still counts a byte so that share > 0 means "errors".
        error_bytes=sum(max(1, node.end_byte - node.start_byte) for node in errors),
        total_bytes=total_bytes,
        unbalanced=unbalanced,
    )


class Checker:
    """One language's parser (and its leniency query), built once and reused."""

    def __init__(self, language: str) -> None:
        self.language = language
        grammar = load_language(language)
        self.parser = Parser(grammar)
        stray = _STRAY_KEYWORDS.get(language)
        self._strays = Query(grammar, stray[0]) if stray else None
        self._stray_text = stray[1] if stray else b""
        self._tags = Query(grammar, _HTML_TAGS) if language == "HTML" else None

    def check(self, data: bytes, timeout_s: float | None = None,
              unclosed_conditionals: int = 0) -> SyntaxReport:
        """Parse `data` (as is) and measure its errors; ParseTimeout past `timeout_s`.

        `unclosed_conditionals` (C/C++: `#if` without `#endif` and the reverse, which
        `prepare` counts) adds to the imbalance.
        """
        tree = parse(self.parser, data, timeout_s)
        strays: list[Node] = []
        if self._strays is not None:
            found = QueryCursor(self._strays).captures(tree.root_node).get("stray", [])
            strays = [n for n in found if data[n.start_byte:n.end_byte] == self._stray_text]
        if self._tags is not None:
            # Counting tags by name in the bytes is cheap and agrees with the tree on
            # nearly every balanced page; the tree's own tags settle the rest.
            unbalanced = html_tag_imbalance_lexical(data) and html_tag_imbalance(
                data, QueryCursor(self._tags).captures(tree.root_node))
        else:
            unbalanced = lexical_imbalance(self.language, data)
        return measure(tree.root_node, len(data), strays, unbalanced + unclosed_conditionals)

    def check_file(self, data: bytes, timeout_s: float | None = None) -> SyntaxReport:
        """`check` after `prepare`: what the stage does with a document's bytes."""
        if self.language in _PREPROCESSED:
            masked, unclosed = mask_conditionals(data)
            return self.check(masked, timeout_s, unclosed)
        return self.check(data, timeout_s)


def rejects(report: SyntaxReport, max_error_share: float, max_missing: int,
            max_unbalanced: int = 0) -> str | None:
    """The rule `report` breaks under these thresholds, or None if it passes."""
    if report.unbalanced > max_unbalanced:
        return "unbalanced"
    if report.error_share > max_error_share:
        return "syntax_error"
    if report.missing_nodes > max_missing:
        return "missing_token"
    return None


# --- balance: a second signal, independent of the grammar's error recovery ----------
# Real files close what they open; cut, line-deleted and bracket-dropped copies do not.
# Where a grammar errs on valid code (C and C++ macros) this is the signal that works.

# What hides brackets from the count: comments, strings, char literals (and in C,
# preprocessor lines, balanced apart). Unterminated strings stop at the line end, an
# unterminated comment at the file end, so a cut file still lexes. The patterns are
# unrolled (`[^"\\]*(?:\\.[^"\\]*)*`): Python's re runs them several times faster.
_C_HIDING = re.compile(rb"/\*[^*]*(?:\*+[^/*][^*]*)*(?:\*+/|\Z)"
                       rb"|//[^\n\\]*(?:\\.[^\n\\]*)*"
                       rb"|\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*(?:\"|$)"
                       rb"|'[^'\\\n]*(?:\\.[^'\\\n]*)*(?:'|$)", re.S | re.M)
# A directive line (continued by `\`), found once comments and strings are hidden.
_DIRECTIVE_LINE = re.compile(rb"^[ \t]*\#[^\n\\]*(?:\\.[^\n\\]*)*", re.S | re.M)
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


def _c_imbalance(data: bytes) -> int:
    """Brackets of the code, and of the macro definitions counted apart.

    Macro bodies count by net total only: `BEGIN_NAMESPACE {` and `END_NAMESPACE }`
    are unbalanced one by one and balanced together. `data` has the not-taken `#if`
    branches blanked (`mask_preprocessor`), so a bracket opened in both counts once.
    """
    visible = _C_HIDING.sub(b" ", data)
    directives = b"".join(_DIRECTIVE_LINE.findall(visible))
    code = _DIRECTIVE_LINE.sub(b"", visible) if directives else visible
    return bracket_imbalance(code) + _net_imbalance(directives)


def lexical_imbalance(language: str, data: bytes) -> int:
    """Unmatched brackets in `data` (after `prepare`); 0 for languages without a rule."""
    if language in _PREPROCESSED:
        return _c_imbalance(data)
    if language == "CSS":
        return bracket_imbalance(_CSS_HIDING.sub(b" ", data))
    if language == "Shell":
        return shell_imbalance(data)
    return 0


# --- Shell: keywords, brackets, quotes and heredocs that close ------------------------
# tree-sitter-bash errs on valid heredocs and `case` forms as often as on damaged
# files, so balance decides. A small lexer hides comments, quoted strings, escapes and
# heredoc bodies, and pairs what opens with what closes: if/fi, case/esac, do/done,
# `(`/`)`, `$(`/`)`, `${`/`}`, `{`/`}`, `[`/`]` (test brackets, globs, subscripts),
# `"`, backquotes. A quote or heredoc left open at the end counts too. Parsing stays
# with the grammar; this only has to agree with bash on which file closes everything.

# Command context: one token per match, blanks before it included (blank lines after a
# newline too); `word` runs hold no bracket, quote or `$(`.
_SH_COMMAND = re.compile(rb"""[ \t\r]*(?:
 (?P<nl>\n[ \t\r\n]*)
|(?P<esc>\\(?:\{\}|.)?)
|(?P<comment>(?<![^ \t\n;&|()])\#[^\n]*)
|(?P<sq>'[^']*'?)
|(?P<ansi>\$'[^'\\]*(?:\\.[^'\\]*)*'?)
|(?P<here><<<|<<(?P<dash>-?)[ \t]*(?:'(?P<q1>[^'\n]*)'|"(?P<q2>[^"\n]*)"
   |\\?(?P<bare>[^\s;&|()<>"'`]+)))
|(?P<op>\$\(\(|\$\(|\$\{|;;&|;;|;&|&&|\|\||\|&|[<>]\(|[;&|()`"\[\]{}])
|(?P<redir>[<>]+&?)
|(?P<word>(?:[^\s;&|()<>"'`\\$\[\]{}]|\$(?![('{"]))+|\$)
|(?P<end>\Z)|(?P<other>.))""", re.S | re.X)
# Arguments after a command's first word: no keyword there, so one match for the run
# (a word starting with `#` would be a comment).
_SH_ARGUMENTS = re.compile(rb"""(?:[ \t\r]*(?:[^\s;&|()<>"'`\\$\[\]{}\#]|\$(?![('{"]))
                                (?:[^\s;&|()<>"'`\\$\[\]{}]|\$(?![('{"]))*)+""", re.X)
_SH_WORD_STATES = frozenset((b"case-head", b"case-pattern", b"case-word", b"for"))
# Inside "...": only expansions open anything.
_SH_DOUBLE = re.compile(rb"""[^"\\$`]+|\\.?|\$\(\(|\$\(|\$\{|\$|[`"]""", re.S)
# Inside ${...} (`#` and `%` are operators there) and $((...)) (`<<` is a shift):
# brackets count, no comment, no heredoc.
_SH_EXPANSION = re.compile(rb"""[^"'\\$`()\[\]{}]+|\\.?|'[^']*'?|\$\(\(|\$\(|\$\{|\$
                               |[`"()\[\]{}]""", re.S | re.X)
_SH_DOUBLE_ACTIVE = frozenset((b'"', b"$(", b"${", b"$((", b"`"))
# A Python script started by a shell line (pip's `'''exec' python "$0" "$@"`): bash
# never reads past that line, so what follows is not shell.
_SH_EXEC_POLYGLOT = re.compile(rb"[ \t]*(?:'')*'exec'[ \t]")
_SH_KEYWORDS = frozenset(b"if fi case esac for select while until do done".split())
# Words after which the next word is a command again (so `if`, `done` are keywords).
_SH_NEXT_IS_COMMAND = frozenset(b"if then elif else do while until ! time".split())
_SH_OPENS_FRAME = {b"$(": b"(", b"(": b"(", b"<(": b"(", b">(": b"(", b"$((": b"((",
                   b"${": b"${", b"{": b"{", b"[": b"["}
_SH_OPENER_OF = {b")": b"(", b"]": b"[", b"}": b"{"}
_SH_SEPARATORS = frozenset((b";", b"&", b"&&", b"||", b"|", b"|&"))
_SH_CASE_PATTERN = frozenset((b"case-pattern", b"case-word"))


def _heredoc_end(data: bytes, pos: int, delimiter: bytes, dash: bool) -> int:
    """Where the line after the heredoc's terminator starts; -1 if none terminates it."""
    terminator = re.compile(rb"^" + (rb"\t*" if dash else b"") + re.escape(delimiter)
                            + rb"\r?$", re.M)
    found = terminator.search(data, pos)
    return -1 if found is None else found.end() + 1


def shell_imbalance(data: bytes) -> int:
    """Openers left unclosed and closers closing nothing in a shell script.

    Frames on the stack: `if`, `loop` (while/until before `do`), `for` (for/select
    before `do`: `for x do` needs no separator), `do`, `case-head` (before `in`),
    `case-pattern` / `case-word` (a pattern list, before its `)`: patterns end with a
    `)` that opens nothing and cannot span lines), `case-command`, and the brackets
    and quotes by their opening text. Keywords count at a command's first word only.
    """
    stack: list[bytes] = []
    bad = 0
    pos, end = 0, len(data)
    command = True  # is the next word a command's first word?
    heredocs: list[tuple[bytes, bool]] = []  # opened on this line, bodies start after it
    while pos < end:
        top = stack[-1] if stack else b""
        if top == b'"' or top == b"${" or top == b"((":
            m = (_SH_DOUBLE if top == b'"' else _SH_EXPANSION).match(data, pos)
            tok = m.group()
            pos = m.end()
            if top == b'"' and tok not in _SH_DOUBLE_ACTIVE:
                continue  # text: a lone `)` in a string closes nothing
            if tok == b'"':
                if top == b'"':
                    stack.pop()
                else:
                    stack.append(b'"')
            elif tok in _SH_OPENS_FRAME:
                stack.append(_SH_OPENS_FRAME[tok])
                command = tok == b"$("
            elif tok == b"`":
                stack.append(b"`")
                command = True
            elif tok in _SH_OPENER_OF:
                if top == _SH_OPENER_OF[tok] or (tok == b"}" and top == b"${"):
                    stack.pop()
                elif tok == b")" and top == b"((" and data[pos:pos + 1] == b")":
                    stack.pop()
                    pos += 1
                else:
                    bad += 1
            elif top != b'"' and tok[:1] == b"'" and (len(tok) == 1 or tok[-1:] != b"'"):
                bad += 1  # a quote in ${...} or $((...)) left open at the end
            continue
        if command and not stack and _SH_EXEC_POLYGLOT.match(data, pos):
            break
        if not command and top not in _SH_WORD_STATES:
            m = _SH_ARGUMENTS.match(data, pos)
            if m:
                pos = m.end()
                continue
        m = _SH_COMMAND.match(data, pos)
        kind = m.lastgroup
        tok = m.group(kind)
        pos = m.end()
        if kind in ("esc", "comment", "redir", "end", "other"):
            continue
        if kind == "sq" or kind == "ansi":
            opening = 1 if kind == "sq" else 2  # `'` or `$'`
            bad += len(tok) == opening or tok[-1:] != b"'"  # unterminated at the end
            command = False
        elif kind == "nl":
            command = True
            bad += top == b"case-word"
            if heredocs:
                pos = m.start(kind) + 1  # the body starts right after the newline
            for delimiter, dash in heredocs:
                pos = _heredoc_end(data, pos, delimiter, dash)
                if pos < 0:
                    bad += 1
                    pos = end
                    break
            heredocs.clear()
        elif kind == "here":
            if tok != b"<<<":
                heredocs.append((m.group("q1") or m.group("q2") or m.group("bare") or b"",
                                 m.group("dash") == b"-"))
        elif kind == "word":
            command, bad = _shell_word(tok, stack, top, command, bad)
        else:
            command, bad = _shell_operator(tok, stack, top, bad)
    return bad + len(stack) + len(heredocs)


def _shell_word(tok: bytes, stack: list[bytes], top: bytes, command: bool,
                bad: int) -> tuple[bool, int]:
    """Apply one word; the new `command` flag and count of unmatched closers."""
    if top == b"case-head":
        if tok == b"in":
            stack[-1] = b"case-pattern"
        return False, bad
    if top == b"case-pattern":
        if tok == b"esac":
            stack.pop()
        else:
            stack[-1] = b"case-word"
        return False, bad
    if top == b"case-word":
        return False, bad
    if top == b"for" and tok == b"do":
        stack[-1] = b"do"
        return True, bad
    if not command:
        return False, bad
    if tok not in _SH_KEYWORDS:
        return tok in _SH_NEXT_IS_COMMAND, bad
    if tok == b"if":
        stack.append(b"if")
    elif tok in (b"for", b"select"):
        stack.append(b"for")
    elif tok in (b"while", b"until"):
        stack.append(b"loop")
    elif tok == b"case":
        stack.append(b"case-head")
    elif tok == b"do":
        if top == b"loop" or top == b"for":
            stack[-1] = b"do"
        else:
            bad += 1
            stack.append(b"do")
    else:  # fi, done, esac
        wanted = {b"fi": b"if", b"done": b"do", b"esac": b"case-command"}[tok]
        if top == wanted:
            stack.pop()
        else:
            bad += 1
    return tok in _SH_NEXT_IS_COMMAND, bad


def _shell_operator(tok: bytes, stack: list[bytes], top: bytes,
                    bad: int) -> tuple[bool, int]:
    """Apply one operator (or bracket, quote); the new `command` flag and count."""
    if tok in (b";;", b";&", b";;&"):
        if top == b"case-command":
            stack[-1] = b"case-pattern"
        elif top != b"case-pattern":
            bad += 1
        return True, bad
    if top in _SH_CASE_PATTERN:
        if tok == b")":
            stack[-1] = b"case-command"
            return True, bad
        if tok == b"(" or tok == b"|":
            return False, bad
    if tok in _SH_SEPARATORS:
        return True, bad
    if tok in _SH_OPENS_FRAME:
        stack.append(_SH_OPENS_FRAME[tok])
        return tok[-1:] in b"({", bad
    if tok == b'"':
        stack.append(b'"')
        return False, bad
    if tok == b"`":
        if top == b"`":
            stack.pop()
            return False, bad
        stack.append(b"`")
        return True, bad
    # ), ], }
    if top == _SH_OPENER_OF[tok]:
        stack.pop()
    else:
        bad += 1
    return False, bad


# Elements that real HTML closes explicitly: the parser may imply `</p>` or `</li>`,
# never `</div>` or `</table>`. Void elements (`<br>`) have no end tag at all.
ALWAYS_CLOSED = frozenset(
    b"html head body title div span a table form select textarea script style pre "
    b"ul ol dl blockquote section nav header footer main article aside iframe svg "
    b"button label h1 h2 h3 h4 h5 h6 b i u s em strong code small sup sub tt kbd var "
    b"samp abbr cite center font big".split())
_HTML_TAGS = """
(start_tag (tag_name) @open)
(end_tag (tag_name) @close)
(erroneous_end_tag (erroneous_end_tag_name) @close)
"""


_ANY_TAG = re.compile(rb"<(/?[a-z][a-z0-9]*)")


def html_tag_imbalance_lexical(data: bytes) -> int:
    """`html_tag_imbalance` from the bytes alone (scripts and comments not set apart)."""
    counts = Counter(_ANY_TAG.findall(data.lower()))
    return sum(abs(counts[name] - counts[b"/" + name]) for name in ALWAYS_CLOSED
               if name in counts or b"/" + name in counts)


def html_tag_imbalance(data: bytes, captures: dict[str, list[Node]]) -> int:
    """Start tags minus end tags, per always-closed element name, summed in absolute value."""
    balance: dict[bytes, int] = {}
    for name, step in (("open", 1), ("close", -1)):
        for node in captures.get(name, ()):
            tag = data[node.start_byte:node.end_byte].lower()
            if tag in ALWAYS_CLOSED:
                balance[tag] = balance.get(tag, 0) + step
    return sum(abs(v) for v in balance.values())


# --- C and C++: what the preprocessor would have done, approximately -----------------

_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)$")
_LONE_MACRO = re.compile(rb"^[ \t]*[A-Z_][A-Z0-9_]{2,}[ \t]*$")
_PREPROCESSED = frozenset({"C", "C++"})


def _blank(line: bytes) -> bytes:
    return b" " * len(line)


def mask_preprocessor(data: bytes) -> bytes:
    """`data` with what tree-sitter cannot see through blanked (`mask_conditionals`)."""
    return mask_conditionals(data)[0]


def mask_conditionals(data: bytes) -> tuple[bytes, int]:
    """`data` with what tree-sitter cannot see through blanked, same length.

    tree-sitter parses C as written, not as preprocessed, so it errs on valid
    headers: `extern "C" {` opened in one #ifdef and closed in another, a
    declaration whose storage class differs per #if branch, lone macros that
    expand to `extern "C" {` (`__BEGIN_DECLS`). We keep the first branch of each
    conditional (the `#else` branch of `#if 0`), blank the other branches, the
    conditional directives and lone upper-case macro lines. Blanking with spaces
    keeps every byte offset, so shares still refer to the original file.

    Also returns the conditionals left unclosed plus the `#endif`s closing nothing:
    real files close every `#if` (an include guard at least), a cut one does not.
    """
    if b"#" not in data and b"_" not in data:
        return data, 0
    stray_ends = 0
    lines = data.split(b"\n")
    # One entry per open conditional: is the branch being read the one we keep?
    keeping: list[bool] = []
    taken: list[bool] = []  # has this conditional already had a kept branch?
    continued = masking = False
    for index, line in enumerate(lines):
        if continued:  # the tail of a directive (or a masked line) continued with `\`
            continued = line.endswith((b"\\", b"\\\r"))
            if masking:
                lines[index] = _blank(line)
            continue
        masking = not all(keeping)
        directive = _DIRECTIVE.match(line)
        if directive:
            word, rest = directive.group(1), directive.group(2).strip()
            if word in (b"if", b"ifdef", b"ifndef"):
                keep = not (word == b"if" and rest == b"0")
                keeping.append(keep)
                taken.append(keep)
            elif keeping and word == b"endif":
                keeping.pop()
                taken.pop()
            elif not keeping:
                stray_ends += word == b"endif"
            else:  # elif / else: kept only if no earlier branch was
                keeping[-1] = not taken[-1]
                taken[-1] = True
            masking = True
        elif not masking and _LONE_MACRO.match(line):
            masking = True
        continued = line.endswith((b"\\", b"\\\r"))
        if masking:
            lines[index] = _blank(line)
    return b"\n".join(lines), len(keeping) + stray_ends


def prepare(language: str, data: bytes) -> bytes:
    """The bytes to parse for a file in `language` (same length as `data`)."""
    return mask_preprocessor(data) if language in _PREPROCESSED else data
