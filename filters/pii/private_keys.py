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
    """Whole blocks, then unterminated ones; linear: the END after each BEGIN is found by
    bisecting the END positions, never by a regex scanning forward from every BEGIN (a
    1 MB run of BEGIN lines once took 22 s that way)."""
    if work is not None:
        work += [len(text)] * 4  # the BEGIN, END, PuTTY and Private-MAC passes
    ends = [(m.start(), m.end()) for m in _END.finditer(text)]
    end_starts = [start for start, _ in ends]
    for begin in _BEGIN.finditer(text):
        at = bisect.bisect_left(end_starts, begin.end())
        if at < len(ends) and ends[at][0] - begin.end() <= _MAX_BLOCK:
            yield Span(begin.start(), ends[at][1], "private_key", "private_key_block")
        else:
            tail = _KEY_LINES.match(text, begin.end())
            if work is not None and tail:
                work.append(tail.end() - begin.end())
            yield Span(begin.start(), tail.end() if tail else begin.end(), "private_key",
                       "private_key_unterminated")
    macs = [(m.start(), m.end()) for m in _PUTTY_MAC.finditer(text)]  # bisected, as END
    mac_starts = [start for start, _ in macs]
    for header in _PUTTY.finditer(text):
        at = bisect.bisect_left(mac_starts, header.end())
        if at < len(macs) and macs[at][0] - header.end() <= _MAX_BLOCK:
            end = macs[at][1]
        else:
            tail = _KEY_LINES.match(text, header.end())
            if work is not None and tail:
                work.append(tail.end() - header.end())
            end = tail.end() if tail else header.end()
        yield Span(header.start(), end, "private_key", "putty_private_key")
