"""What a PII rule reports and how it is replaced: `Span`, one placeholder per kind."""

from __future__ import annotations

from dataclasses import dataclass

PLACEHOLDERS = {
    "email": "<EMAIL>",
    "ip_address": "<IP_ADDRESS>",
    "key": "<KEY>",
    "private_key": "<PRIVATE_KEY>",
}
KINDS = tuple(PLACEHOLDERS)


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    rule: str


def redact(text: str, spans: list[Span]) -> str:
    """`text` with each span (disjoint, in text order) replaced by its kind's placeholder."""
    out: list[str] = []
    last = 0
    for span in spans:
        out.append(text[last:span.start])
        out.append(PLACEHOLDERS[span.kind])
        last = span.end
    out.append(text[last:])
    return "".join(out)
