"""Damage as real breakage looks, beyond corpus.py's cut / delete_lines / drop_bracket.

Each kind is made only where it is certain to break the file; an oracle (oracle.py)
then confirms it where the language has one:
- dedent_block (Python): a block's body dedented to its header's level;
- cut_after_header: the file cut right after a block header (`if x:` in Python, an
  opening `{` or `do` / `then` elsewhere);
- cut_in_text: the file cut inside a block comment, a string or a heredoc body;
- drop_inner_closer: the closing delimiter of a block nested in another removed
  (`}`, `end`, `fi`, `done`, `esac`);
- lose_php_open (PHP): the `<?php` line lost, the code read as text.
Deterministic: the random choice is seeded by the entry and the kind.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable

from tests.calibration.corpus import Pair, pairs_and_brackets

KINDS = ("dedent_block", "cut_after_header", "cut_in_text", "drop_inner_closer",
         "lose_php_open")

# Node types holding text a cut inside leaves open: block comments (checked to start
# with `/*` or `=begin`), strings and heredoc bodies.
_TEXT_NODES = frozenset((
    "comment", "block_comment", "string", "string_literal", "raw_string_literal",
    "template_string", "interpreted_string_literal", "encapsed_string", "heredoc_body",
    "verbatim_string_literal", "text_block", "raw_string", "char_literal"))
_BLOCK_COMMENT_OPENERS = (b"/*", b"=begin")
_BLOCK_CLOSERS = frozenset((b"}", b"end", b"fi", b"done", b"esac"))
_HEADER_OPENERS = frozenset(("{", "do", "then", "begin", "def", "class", "module"))


def _rng(entry: str, kind: str) -> random.Random:
    return random.Random(f"{entry}\x00{kind}")


def _walk(root) -> list:  # root: tree_sitter.Node
    """Every node of the tree, in the order `_nodes` sorts from."""
    found = []
    stack = [root]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children)
    return found


def _nodes(root, wanted, every: list | None = None) -> list:  # root: tree_sitter.Node
    """The nodes `wanted` accepts, by (start, end). `every`: `_walk(root)`, if the caller
    has it (one walk for all kinds of a file)."""
    found = [n for n in (_walk(root) if every is None else every) if wanted(n)]
    found.sort(key=lambda n: (n.start_byte, n.end_byte))
    return found


def _python_blocks(root, every: list | None = None) -> list:
    """`block` nodes of compound statements whose body starts on a later line."""
    return [n for n in _nodes(root, lambda n: n.type == "block" and n.named_child_count, every)
            if n.parent is not None and n.start_point[0] > n.parent.start_point[0]]


def dedent_block(data: bytes, root, rng: random.Random,
                 every: list | None = None) -> bytes | None:
    blocks = _python_blocks(root, every)
    if not blocks:
        return None
    block = rng.choice(blocks)
    header_column = block.parent.start_point[1]
    body_column = block.start_point[1]
    shift = body_column - header_column
    if shift <= 0:
        return None
    lines = data.split(b"\n")
    first, last = block.start_point[0], block.end_point[0]
    for i in range(first, last + 1):
        line = lines[i]
        blank = len(line) - len(line.lstrip(b" \t"))
        lines[i] = line[min(blank, shift):]
    return b"\n".join(lines)


def cut_after_header(language: str, data: bytes, root, rng: random.Random,
                     every: list | None = None) -> bytes | None:
    if language == "Python":
        blocks = _python_blocks(root, every)
        if not blocks:
            return None
        block = rng.choice(blocks)
        end = data.rfind(b"\n", 0, block.start_byte)
        return data[:end + 1] if end > 0 else None
    if language in ("HTML", "JSON", "CSS"):
        return None
    openers = _nodes(root, lambda n: n.child_count == 0 and n.type in _HEADER_OPENERS
                     and n.parent is not None and n.parent.end_byte > n.end_byte + 1, every)
    # A block opener that ends its line: the header's last token.
    openers = [n for n in openers if data[n.end_byte:n.end_byte + 1] in (b"\n", b"\r")
               and len(data) // 8 < n.end_byte < len(data) - 2]
    if not openers:
        return None
    return data[:rng.choice(openers).end_byte] + b"\n"


def cut_in_text(data: bytes, root, rng: random.Random,
                every: list | None = None) -> bytes | None:
    def wanted(node) -> bool:
        if node.type not in _TEXT_NODES or node.end_byte - node.start_byte < 8:
            return False
        text = data[node.start_byte:node.start_byte + 6]
        if "comment" in node.type:
            return text.startswith(_BLOCK_COMMENT_OPENERS)
        return True

    spans = [n for n in _nodes(root, wanted, every) if n.parent is not None]
    # Outermost only: a string inside a heredoc or template is inside its parent too.
    if not spans:
        return None
    node = rng.choice(spans)
    return data[:rng.randrange(node.start_byte + 3, node.end_byte - 3)]


def drop_inner_closer(data: bytes, root, rng: random.Random,
                      pairs: list[Pair] | None = None) -> bytes | None:
    """`pairs`: `pairs_and_brackets(root)[0]`, if the caller has them already."""
    if pairs is None:
        pairs, _ = pairs_and_brackets(root)
    closers = [p for p in pairs if _closer(data, p.close_start) in _BLOCK_CLOSERS]
    enclosing = _latest_close_opened_before(pairs)
    inner = [p for p in closers if enclosing(p.open_start) > p.close_start]
    if not inner:
        return None
    pair = rng.choice(inner)
    closer = _closer(data, pair.close_start)
    return data[:pair.close_start] + data[pair.close_start + len(closer):]


def _latest_close_opened_before(pairs: list[Pair]) -> Callable[[int], int]:
    """offset -> the largest `close_start` of the pairs that open before it (-1 if
    none): a pair is inside another exactly when that exceeds its own `close_start`.
    (Sorted prefix maxima, one bisect a pair: testing every other pair cost 0.15 s a
    JavaScript file of the validation lists.)"""
    ordered = sorted(pairs, key=lambda o: o.open_start)
    starts = [o.open_start for o in ordered]
    latest = list(itertools.accumulate((o.close_start for o in ordered), max, initial=-1))
    return lambda offset: latest[bisect.bisect_left(starts, offset)]


def _closer(data: bytes, at: int) -> bytes:
    for word in (b"}", b"end", b"fi", b"done", b"esac"):
        if data.startswith(word, at) and not data[at + len(word):at + len(word) + 1].isalnum():
            return word
    return b""


def lose_php_open(data: bytes) -> bytes | None:
    """Without its `<?php` line, a file is all HTML to PHP (`php -l` accepts it): broken
    by construction when code with braces followed the tag."""
    at = data.find(b"<?php")
    if at < 0 or data.find(b"?>", at) >= 0 or b"{" not in data[at:]:
        return None
    end = data.find(b"\n", at)
    return data[:at] + (data[end + 1:] if end >= 0 else b"")


def damaged(language: str, entry: str, data: bytes, root,
            pairs: list[Pair] | None = None) -> dict[str, bytes | None]:
    """The copies of one file, per kind (None where a kind does not apply); `pairs` as
    for `drop_inner_closer`. The tree is walked once for all kinds."""
    every = _walk(root)
    return {
        "dedent_block": (dedent_block(data, root, _rng(entry, "dedent_block"), every)
                         if language == "Python" else None),
        "cut_after_header": cut_after_header(language, data, root,
                                             _rng(entry, "cut_after_header"), every),
        "cut_in_text": cut_in_text(data, root, _rng(entry, "cut_in_text"), every),
        "drop_inner_closer": (None if language == "Python" else
                              drop_inner_closer(data, root, _rng(entry, "drop_inner_closer"),
                                                pairs)),
        "lose_php_open": lose_php_open(data) if language == "PHP" else None,
    }
