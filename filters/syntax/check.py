"""Syntax validity of one source file, measured with a tree-sitter grammar.

Pure: bytes and a parser in, numbers out. The metric is the share of the
file's bytes that the grammar could not place in a tree (under ERROR nodes)
plus MISSING nodes, which tree-sitter inserts where a token (a closing bracket,
a semicolon) should have been and which span no bytes. Thresholds live in the
stage; here we only measure.

A second signal, independent of the grammar's error recovery, counts what the
file leaves unclosed (syntax_balance, syntax_shell): brackets outside strings and
comments (C, C++, CSS, PHP), `#if`/`#endif` (C, C++, C#), HTML elements whose end
tag is required left open (nested as the HTML parsing algorithm closes them) and a
page cut inside a tag, keywords, brackets, quotes and heredocs (Shell).
Real files balance; cut or damaged copies almost never do. Before parsing,
syntax_mask blanks what a grammar cannot see through in valid code (C
preprocessor branches, TypeScript variance annotations), keeping every offset.

Grammars come from the official per-language wheels (tree-sitter-python, ...),
never from tree-sitter-language-pack, which downloads grammars at run time.
"""

from __future__ import annotations

import ctypes
import importlib
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Language, Node, Parser

from .balance import (
    html_cut_in_markup,
    html_unclosed,
    lexical_imbalance,
)
from .mask import MASKED_ON_ERROR, mask, prepare
from .python import empty_blocks

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


_read_leak: int | None = None  # references tree-sitter keeps per read-callback return


def _references_kept(parser: Parser) -> int:
    """How many references py-tree-sitter keeps to each object a read callback returns.

    0.26.1's parser_read_wrapper takes a buffer on the returned object and never
    drops the reference the call gave it, so every returned view (and the whole
    document behind it) lives as long as the process: measured, +7 MB per demo
    shard per worker, carried into every later task of that worker. Measured once
    on a probe rather than assumed, so a fixed release is not released twice.
    """
    global _read_leak
    if _read_leak is None:
        probe = bytes(bytearray(b"x\n"))  # a fresh object: its count is ours alone
        before = sys.getrefcount(probe)
        calls = [0]

        def read(offset: int, _point: object) -> bytes:
            if offset:
                return b""
            calls[0] += 1
            return probe

        parser.parse(read)
        parser.reset()
        _read_leak = max(0, (sys.getrefcount(probe) - before) // max(calls[0], 1))
        _release(probe, _read_leak * calls[0])
    return _read_leak


def _release(obj: object, count: int) -> None:
    for _ in range(count):
        ctypes.pythonapi.Py_DecRef(ctypes.py_object(obj))


def parse(parser: Parser, data: bytes, timeout_s: float | None = None):  # -> Tree
    """Parse `data`, cancelling after `timeout_s` seconds of parser CPU time.

    tree-sitter 0.26 dropped `timeout_micros`; a progress callback that says
    "stop" is the way to bound a parse, and it only exists for the callback
    form of `parse`. Reading through a memoryview keeps that form zero-copy;
    the references tree-sitter keeps to the views are dropped afterwards.
    """
    if timeout_s is None:
        return parser.parse(data)
    kept = _references_kept(parser)
    view = memoryview(data)
    # CPU time of this thread (the parse runs in it), not wall time: on a loaded machine
    # wall time runs 5x the CPU time (measured: a 1 MB generated bundle, 0.71 s wall for
    # 0.14 s CPU at load 28), and a wall-clock budget would drop a large valid file on a
    # busy worker only. The clock costs ~5 us a read, so it is read every 64th callback
    # (tree-sitter calls back ~9,000 times per MB).
    clock = time.thread_time
    deadline = clock() + timeout_s
    calls = 0
    returned: list[memoryview] = []

    def read(offset: int, _point: object) -> memoryview:
        chunk = view[offset:]
        if kept:
            returned.append(chunk)
        return chunk

    def past_deadline(_offset: int, _has_error: bool) -> bool:
        nonlocal calls
        calls += 1
        return not calls & 63 and clock() > deadline

    try:
        return parser.parse(read, progress_callback=past_deadline)
    except ValueError as error:  # "Parsing failed": cancelled by the callback
        parser.reset()  # else the next parse would resume this one
        raise ParseTimeout(f"parse exceeded {timeout_s}s") from error
    finally:
        for chunk in returned:
            _release(chunk, kept)


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
# method named `end`: an `identifier` child of the root `program` (the query
# `(program (identifier) @stray)`, read off the root's children: a query cursor walks
# the whole tree, ~35% of a Ruby parse). (Python's: a block header without a body,
# syntax_python.)
_STRAY_KEYWORDS: dict[str, tuple[str, str, bytes]] = {
    "Ruby": ("program", "identifier", b"end"),
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


# The Flow pragma in the file's leading comments (after a shebang, a licence...).
_FLOW_PRAGMA = re.compile(rb"\A(?:#![^\n]*\n)?(?:\s*(?://[^\n]*\n|/\*.*?\*/))*?\s*"
                          rb"(?://[^\n]*@flow\b|/\*(?:(?!\*/).)*?@flow\b)", re.S)


class Checker:
    """One language's parser (and its leniency query), built once and reused."""

    def __init__(self, language: str) -> None:
        self.language = language
        grammar = load_language(language)
        self.parser = Parser(grammar)
        self._stray = _STRAY_KEYWORDS.get(language)
        self._html = language == "HTML"
        self._flow: Checker | None = None  # JavaScript: the checker of `@flow` files

    def _flow_checker(self, data: bytes) -> Checker | None:
        """For a JavaScript file that declares Flow types (`/* @flow */` or `// @flow` in
        its first comment), the TypeScript grammar's checker: type annotations, `import
        type`, `implements` are errors to the JavaScript grammar, and The Stack labels
        such files JavaScript (React's and Vue 2's sources). None for other files."""
        if self.language != "JavaScript" or b"@flow" not in data[:2048]:
            return None
        if not _FLOW_PRAGMA.match(data):
            return None
        if self._flow is None:
            self._flow = Checker("TypeScript")
        return self._flow

    def check(self, data: bytes, timeout_s: float | None = None,
              unclosed_conditionals: int = 0) -> SyntaxReport:
        """Parse `data` (as is) and measure its errors; ParseTimeout past `timeout_s`.

        `unclosed_conditionals` (C, C++, C#: `#if` without `#endif` and the reverse,
        which `syntax_mask.mask` counts) adds to the imbalance.
        """
        tree = parse(self.parser, data, timeout_s)
        strays: list[Node] = []
        if self._stray is not None:
            root_type, child_type, text = self._stray
            root = tree.root_node
            if root.type == root_type:
                strays = [n for n in root.children if n.type == child_type
                          and data[n.start_byte:n.end_byte] == text]
        elif self.language == "Python":
            strays = empty_blocks(data, tree.root_node)
        if self._html:
            # Elements left open as the HTML parsing algorithm nests them, and a file
            # that ends inside a tag or comment (balance.py).
            unbalanced = html_unclosed(data) + html_cut_in_markup(data)
        else:
            unbalanced = lexical_imbalance(self.language, data)
        return measure(tree.root_node, len(data), strays, unbalanced + unclosed_conditionals)

    def check_file(self, data: bytes, timeout_s: float | None = None) -> SyntaxReport:
        """`check` after `syntax_mask.mask`: what the stage does with a document's bytes.

        The MASKED_ON_ERROR languages (TypeScript, TSX, Rust, Python, JavaScript,
        PHP) are parsed as they are first, and masked only if the grammar errs (each
        parse has `timeout_s`). Flow-typed JavaScript is read with the TypeScript
        grammar (`_flow_checker`).
        """
        flow = self._flow_checker(data)
        if flow is not None:
            return flow.check_file(data, timeout_s)
        if self.language in MASKED_ON_ERROR:
            report = self.check(data, timeout_s)
            if report.error_nodes or report.missing_nodes:
                masked = prepare(self.language, data)
                if masked != data:
                    return self.check(masked, timeout_s)
            return report
        masked, unclosed = mask(self.language, data)
        return self.check(masked, timeout_s, unclosed)


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


__all__ = ["GRAMMARS", "Checker", "ParseTimeout", "SyntaxReport", "error_spans",
           "load_language", "measure", "parse", "prepare", "rejects"]
