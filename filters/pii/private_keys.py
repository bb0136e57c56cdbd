"""Private keys: PEM blocks (`-----BEGIN ... PRIVATE KEY-----`), whole or cut off before
their END line, and PuTTY's .ppk keys, each replaced whole by `<PRIVATE_KEY>`."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from .redact import Span

_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_MAX_BLOCK = 20000  # characters between BEGIN and END in a real key (RSA 16384: ~13 KB)

# A block cut off before its END line (a truncated file, a paste): the BEGIN line and the
# base64 lines (and `Proc-Type:`-style headers) after it, up to the first other line. A
# short last line counts only with its `=` padding; most of the key is gone either way.
_KEY_LINES = re.compile(
    r"(?:(?:[ \t]*(?:\r?\n|(?:\\r)?\\n)[ \t]*|[ \t]+)?"
    r"(?:[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]{1,15}={1,2}|[A-Za-z-]{3,20}: [^\r\n\\]{1,200})"
    r")*")
# PuTTY's .ppk (detect-secrets' PrivateKeyDetector names `PuTTY-User-Key-File-2`):
# a header line, then `Key: value` lines and base64 lines, ending with `Private-MAC:`.
_PUTTY = re.compile(r"PuTTY-User-Key-File-[23]: [^\r\n\\]{1,200}")
_PUTTY_MAC = re.compile(r"Private-MAC: [0-9a-fA-F]{1,128}")


def find_private_keys(text: str, work: list[int] | None = None) -> Iterator[Span]:
    """Whole blocks, then unterminated ones, then PuTTY keys."""
    if work is not None:
        work += [len(text)] * 4  # the BEGIN, END, PuTTY and Private-MAC passes
    for start, end, closed in _blocks(text, _BEGIN, _END, work):
        yield Span(start, end, "private_key",
                   "private_key_block" if closed else "private_key_unterminated")
    for start, end, _closed in _blocks(text, _PUTTY, _PUTTY_MAC, work):
        yield Span(start, end, "private_key", "putty_private_key")


def _blocks(text: str, opening: re.Pattern[str], closing: re.Pattern[str],
            work: list[int] | None) -> Iterator[tuple[int, int, bool]]:
    """(start, end, closed) of each `opening` line's block: up to the first `closing` line
    within _MAX_BLOCK characters, else over the key lines after it. Linear: the closing
    line is found by bisecting the closing lines' positions, never by a regex scanning
    forward from every opening line (a 1 MB run of BEGIN lines once took 22 s that way)."""
    ends = [(m.start(), m.end()) for m in closing.finditer(text)]
    end_starts = [start for start, _ in ends]
    for begin in opening.finditer(text):
        at = bisect.bisect_left(end_starts, begin.end())
        if at < len(ends) and ends[at][0] - begin.end() <= _MAX_BLOCK:
            yield begin.start(), ends[at][1], True
            continue
        tail = _KEY_LINES.match(text, begin.end())
        if work is not None and tail:
            work.append(tail.end() - begin.end())
        yield begin.start(), tail.end() if tail else begin.end(), False
