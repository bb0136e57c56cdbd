"""Rules on what the text holds: encoded data (base64, hex, `\\u` escapes) and invisible
characters (bidi controls, zero-width characters).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .base import CodeDoc, CodeRule, doc

# StarCoder2's encoded-data patterns (Python's re), each with an RE2 twin for pyarrow that
# matches wherever the Python one does: RE2's \b and \s are ASCII-only, so its \b fires at
# least as often, and Python's other whitespace is listed by hand.
_BASE64 = r"[a-zA-Z0-9+/\n=]{64,}"
_HEX = r"(?:\b(?:0x|\\x)?[0-9a-fA-F]{2}(?:,|\b\s*)){8,}"
_UNICODE = r"(?:\\u[0-9a-fA-F]{4}){8,}"
ENCODED_PATTERNS = [
    (re.compile(_BASE64), r"[a-zA-Z0-9+/\n=]{64}"),
    (re.compile(_HEX), r"(?:\b(?:0x|\\x)?[0-9a-fA-F]{2}(?:,|\b[\s\pZ\x0b\x1c-\x1f\x85]*)){8}"),
    (re.compile(_UNICODE), r"(?:\\u[0-9a-fA-F]{4}){8}"),
]


@dataclass(frozen=True)
class EncodedData(CodeRule):
    """StarCoder2: base64 / hex / unicode-escape blobs embedded in source."""

    encoded_max_match: int | None = field(default=1024, metadata=doc(
        "Longest base64/hex/\\u-escape run allowed, in characters (StarCoder2: 1024)."))
    encoded_max_fraction: float | None = field(default=0.5, metadata=doc(
        "Highest share of characters inside encoded runs (StarCoder2: 0.5)."))
    reasons = ("encoded_data",)

    def measure(self, text: str, patterns: list[int] | None = None) -> tuple[int, float]:
        """Longest match and the fraction of characters inside matches.

        `patterns` limits the search to those of `ENCODED_PATTERNS` (by index) that can
        match.
        """
        indices = range(len(ENCODED_PATTERNS)) if patterns is None else patterns
        chosen = [ENCODED_PATTERNS[k][0] for k in indices]
        spans = sorted(m.span() for pattern in chosen for m in pattern.finditer(text))
        longest, covered, end = 0, 0, 0
        for start, stop in spans:
            longest = max(longest, stop - start)
            if stop > end:  # union of spans: patterns can overlap
                covered += stop - max(start, end)
                end = stop
        return longest, covered / max(len(text), 1)

    def check(self, d: CodeDoc) -> str | None:
        if self.encoded_max_match is None and self.encoded_max_fraction is None:
            return None
        if d.encoded_screens is not None and not d.encoded_screens:
            return None  # the screen found nothing any pattern could match
        longest, d.encoded_fraction = self.measure(d.text, d.encoded_screens)
        if self.encoded_max_match is not None and longest > self.encoded_max_match:
            return "encoded_data"
        if self.encoded_max_fraction is not None and d.encoded_fraction > self.encoded_max_fraction:
            return "encoded_data"
        return None


# Unicode's bidirectional formatting controls (UAX #9: LRE..RLO, LRI..PDI, LRM/RLM/ALM),
# which reorder how code displays ("Trojan Source", CVE-2021-42574), and the zero-width and
# invisible characters that hide text or split identifiers (ZWSP, ZWNJ, ZWJ, WJ, invisible
# operators, a BOM inside the text). A leading BOM is not counted.
_INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069"
                        "\ufeff]")


@dataclass(frozen=True)
class InvisibleCharacters(CodeRule):
    """Off by default: bidi controls and zero-width characters in code (Trojan Source)."""

    invisible_chars: bool = field(default=False, metadata=doc(
        "Remove files with Unicode bidi controls (U+202A-202E, U+2066-2069, U+200E/200F, "
        "U+061C) or zero-width characters (U+200B-200D, U+2060-2064, a BOM inside the "
        "text): they make code display other than it runs (CVE-2021-42574)."))
    reasons = ("invisible_chars",)

    def check(self, d: CodeDoc) -> str | None:
        if not self.invisible_chars:
            return None
        found = _INVISIBLE.search(d.text, 1 if d.text.startswith("\ufeff") else 0)
        if found is None:
            return None
        line = d.text.count("\n", 0, found.start()) + 1
        d.detail = f"U+{ord(found.group()):04X} on line {line}"
        return "invisible_chars"
