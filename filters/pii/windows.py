"""The geometry of the windows regexes run in (docs/stages.md#pii), and a lowering that
keeps positions: the prefilter runs on the lowered text, the rules on the text.

A hit opens a window of the rule's own maximum match width (at most REACH) on each side;
windows of one rule are merged up to SPAN characters, so each character is read by a rule
a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

REACH = 256  # characters a window reaches on each side of a hit (an unbounded pattern's cap)
SPAN = 8 * REACH  # longest merged window: 2 * REACH of every window is overlap at most


def merged(windows: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Windows sorted by start, overlapping ones joined while they stay within SPAN."""
    lo = hi = -1
    for start, end in windows:
        if lo >= 0 and start <= hi and max(hi, end) - lo <= SPAN:
            hi = max(hi, end)
            continue
        if lo >= 0:
            yield lo, hi
        lo, hi = start, end
    if lo >= 0:
        yield lo, hi


# Characters whose lowercase is longer (U+0130 `İ` -> `i̇`): lowered to their first character,
# so that positions in the lowered text are positions in the text.
# The only one in Python 3.11's Unicode (tests/test_pii_secrets.py checks it).
LONGER_LOWER = {"\u0130": "i"}


def lower(text: str) -> str:
    """`text.lower()`, of the same length (a position in it is a position in `text`)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    for char, first in LONGER_LOWER.items():  # str.replace: str.translate is 50x slower
        text = text.replace(char, first)
    return text.lower()
