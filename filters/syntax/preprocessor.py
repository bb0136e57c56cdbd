"""C, C++ and C#: conditional compilation resolved to one branch before parsing.

tree-sitter parses C as written, not as preprocessed, so it errs on valid files:
`extern "C" {` opened in one `#ifdef` and closed in another, a declaration whose
storage class differs per `#if` branch, lone macros that expand to `extern "C" {`
(`__BEGIN_DECLS`), C# `#if` lines inside an argument list. `mask_conditionals` keeps
one branch of each conditional and blanks the rest, with the same length and the
same newlines, so offsets and shares still refer to the original file; it also
counts the conditionals a cut file leaves unclosed.
"""

from __future__ import annotations

import bisect
import re

# The lines the mask acts on: conditional directives and lone upper-case macro lines.
# Each pattern starts with a literal (`#`, a newline), which the regex engine skips to
# at C speed; `^` in multiline mode would be tried at every byte.
_DIRECTIVE = re.compile(rb"\#[ \t]*(?P<word>if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)"
                        rb"\b(?P<rest>[^\n]*)")
_LONE_MACRO = re.compile(rb"\n[ \t]*[A-Z_][A-Z0-9_]{2,}[ \t]*(?=\n|\Z)")
_FIRST_LONE_MACRO = re.compile(rb"[ \t]*[A-Z_][A-Z0-9_]{2,}[ \t]*(?=\n|\Z)")
# Block comments, found past line comments and literals (`//*x`, `"a/*"` open none).
_COMMENT_OR_LITERAL = re.compile(
    rb"""//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|/\*.*?(?:\*/|\Z)""", re.S)
# `#if 0` (C) and `#if false` (C#): the branch the compiler never reads.
_NEVER = frozenset((b"0", b"false"))
# Blank lines and preprocessor lines only (`# define NS ::std`): a branch of no code.
_BLANK_RUN = re.compile(rb"(?:[ \t]*(?:#[^\n]*)?\r?\n)*[ \t]*")
BLANKS = bytes(b if b == 0x0A else 0x20 for b in range(256))  # all but newlines
PREPROCESSED = frozenset({"C", "C++"})


def _blank_run_end(data: bytes, start: int, stop: int) -> int:
    """Where the blank and comment lines from `start` end (at most `stop`)."""
    match = _BLANK_RUN.match(data, start, stop)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _condition(rest: bytes) -> bytes:
    """A directive's condition without a trailing comment."""
    return rest.split(b"/*", 1)[0].split(b"//", 1)[0].strip()


def blank(line: bytes) -> bytes:
    """Spaces of `line`'s length (a mask keeps every offset)."""
    return b" " * len(line)


def mask_preprocessor(data: bytes) -> bytes:
    """`data` with what tree-sitter cannot see through blanked (`mask_conditionals`)."""
    return mask_conditionals(data)[0]


def _continued(data: bytes, line_start: int) -> bool:
    """Does the line before `line_start` end with `\\` (so this line continues it)?"""
    before = data[max(0, line_start - 3):line_start - 1]
    return line_start > 0 and (before.endswith(b"\\") or before == b"\\\r")


def _line_end(data: bytes, pos: int) -> int:
    """End of the line holding `pos`, after the lines a trailing `\\` continues it on."""
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            return len(data)
        if not data[pos:end].rstrip(b"\r").endswith(b"\\"):
            return end
        pos = end + 1


def _in_comment(comments: list[tuple[int, int]], at: int) -> bool:
    i = bisect.bisect_right(comments, (at, 1 << 62)) - 1
    return i >= 0 and comments[i][0] < at < comments[i][1]


def _lines_to_mask(data: bytes, lone_macros: bool, comments: list[tuple[int, int]] | None = None
                   ) -> list[tuple[int, bytes, bytes]]:
    """(line start, directive word, rest of the line) of each conditional directive,
    and (line start, b"", b"") of each lone macro line, in file order. Directives
    inside the block comments `comments` (start, end) are not directives."""
    found = []
    for directive in _DIRECTIVE.finditer(data):
        at = directive.start()
        line_start = data.rfind(b"\n", 0, at) + 1
        if comments and _in_comment(comments, at):
            continue  # `/* #ifdef X ... #endif */`: a commented-out conditional
        if not data[line_start:at].strip(b" \t"):  # `#` opens the line
            found.append((line_start, directive.group("word"), directive.group("rest")))
    if lone_macros:
        first = _FIRST_LONE_MACRO.match(data)
        found += [(0, b"", b"")] if first else []
        found += [(macro.start() + 1, b"", b"") for macro in _LONE_MACRO.finditer(data)]
        found.sort(key=lambda line: line[0])
    return found


def mask_conditionals(data: bytes, lone_macros: bool = True) -> tuple[bytes, int]:
    """`data` with conditional compilation resolved to one branch, same length.

    tree-sitter parses C as written, not as preprocessed, so it errs on valid
    headers: `extern "C" {` opened in one #ifdef and closed in another, a
    declaration whose storage class differs per #if branch, lone macros that
    expand to `extern "C" {` (`__BEGIN_DECLS`). We keep the first branch of each
    conditional (the `#else` branch of `#if 0`), blank the other branches, the
    conditional directives and (`lone_macros`, C and C++ only: C# has no macros)
    lone upper-case macro lines. Blanking with spaces keeps every byte offset (and
    newline), so shares still refer to the original file. A line continued by `\\`
    belongs to the line it continues.

    Also returns the conditionals left unclosed plus the `#endif`s closing nothing:
    real files close every `#if` (an include guard at least), a cut one does not.
    Where that count is not 0 and the file has block comments, the directives inside
    them (a conditional commented out line by line) are left out and it is counted
    again: files whose conditionals close pay for no comment scan.
    """
    masked, unclosed = _mask_conditionals(data, lone_macros)
    if unclosed and b"/*" in data:
        comments = [m.span() for m in _COMMENT_OR_LITERAL.finditer(data)
                    if m.group().startswith(b"/*")]
        masked, unclosed = _mask_conditionals(data, lone_macros, comments)
    return masked, unclosed


def _mask_conditionals(data: bytes, lone_macros: bool,
                       comments: list[tuple[int, int]] | None = None) -> tuple[bytes, int]:
    out = bytearray(data)
    stray_ends = 0
    # One entry per open conditional: is the branch being read the one we keep?
    keeping: list[bool] = []
    taken: list[bool] = []  # has this conditional already had a kept branch?
    done = 0  # where the text not yet blanked or kept starts
    lines = _lines_to_mask(data, lone_macros, comments)
    for i, (start, word, rest) in enumerate(lines):
        if start < done or _continued(data, start):
            continue
        end = _line_end(data, start)
        if not all(keeping):  # a branch left out, up to this line
            out[done:start] = data[done:start].translate(BLANKS)
        if not word:  # a lone macro line
            pass
        elif word in (b"if", b"ifdef", b"ifndef"):
            # `#if 0 /* just to make Emacs auto-indent happy */` (libgpg-error)
            keep = not (word == b"if" and _condition(rest) in _NEVER)
            # A first branch without code (`#if USE_STD` + `# define NS ::std`, then
            # `#elif TR1` + `namespace tr1 {`, closed further down under `#if !USE_STD`):
            # the next branch is kept, so both conditionals read the same
            # configuration (libstdc++'s tr1).
            following = lines[i + 1] if i + 1 < len(lines) else None
            if (following is not None and following[1] in (b"elif", b"else")
                    and _blank_run_end(data, end, following[0]) == following[0]):
                keep = False  # (the match stops at the first byte of code: no copy)
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
        out[start:end] = data[start:end].translate(BLANKS)
        done = end
    if not all(keeping):
        out[done:] = data[done:].translate(BLANKS)
    return bytes(out), len(keeping) + stray_ends
