"""Python blocks without a body, which tree-sitter-python accepts and CPython does not.

`if x:` with its body dedented to the header's level, or a file cut right after a
header, parses clean in tree-sitter-python (an empty `block` node); CPython rejects
both ("expected an indented block"). These are half of all real Python damage.

Walking every `block` of the tree costs a fifth of the parse, so a regex finds the
candidates first: a `:` that ends a line (a comment may follow) whose next code line
is indented no deeper than the `:`'s line, or that ends the file. Docstrings
("Returns:" then text) are candidates too; the tree settles each one: only a `:`
token followed by a `block` with no statement in it counts. Pure: bytes and a tree in.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

# A line-ending `:`, the blank or comment-only lines after it, and the indentation of
# the next code line (group `indent`; absent at the end of the file). The pattern
# starts with its literal `:`, which the regex engine skips to at C speed.
_HEADER_END = re.compile(rb":[ \t]*(?:\#[^\n]*)?(?:\r?\n[ \t\f]*(?:\#[^\n]*)?)*?"
                         rb"(?:\r?\n(?P<indent>[ \t]*)(?=[^\s\#])|\s*\Z)")


def _indent(data: bytes, at: int) -> int:
    start = data.rfind(b"\n", 0, at) + 1
    line = data[start:at]
    return len(line) - len(line.lstrip(b" \t"))


def empty_blocks(data: bytes, root: Node) -> list[Node]:
    """The `:` tokens of block headers whose block holds no statement (only comments
    or nothing), as nodes to count as errors."""
    found: list[Node] = []
    for match in _HEADER_END.finditer(data):
        indent = match.group("indent")
        if indent is not None and len(indent) > _indent(data, match.start()):
            continue  # the next line is the body
        colon = root.descendant_for_byte_range(match.start(), match.start() + 1)
        if colon is None or colon.type != ":":
            continue  # in a string or comment, or not a token of its own
        # The block after the `:` (next_sibling skips a zero-width one: read the
        # parent's children).
        siblings = colon.parent.children if colon.parent is not None else []
        after = [node for node in siblings if node.start_byte >= colon.end_byte
                 and node.type != "comment"]
        block = after[0] if after else None
        if block is not None and block.type == "block" and all(
                child.type == "comment" for child in block.named_children):
            found.append(colon)
    return found
