"""The contract of a code rule: `CodeDoc` (one file as the rules see it) and `CodeRule`.

A rule is a frozen dataclass whose fields are its parameters, under the names the
manifest uses (`doc()` gives each its description); None (or false, for a switch)
turns it off. `check(doc)` returns None (keep) or the reason (drop), and may leave a
detail or a measurement on the `CodeDoc`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from ..code_metrics import LineMetrics


@dataclass
class CodeDoc:
    """One file as the rules see it. Rules may leave what they measured on it."""

    text: str
    metrics: LineMetrics
    path: str | None = None
    lang: str | None = None
    known: dict[str, bool | None] = field(default_factory=dict)
    """The source's own verdicts (`generated`, `vendored`: The Stack v2's columns)."""
    encoded_screens: list[int] | None = None
    """Indices of the encoded-data patterns (content.py's `ENCODED_PATTERNS`) a screen found
    in the text (None: not screened, search them all)."""
    encoded_fraction: float = 0.0
    detail: str | None = None


def doc(text: str) -> dict[str, Any]:
    """A parameter's description (the manifest reference shows it)."""
    return {"doc": text}


@dataclass(frozen=True)
class CodeRule:
    """A rule: its parameters are its fields (None or false: off), `check` its verdict."""

    reasons: ClassVar[tuple[str, ...]] = ()

    def check(self, d: CodeDoc) -> str | None:
        raise NotImplementedError

    @classmethod
    def off(cls) -> CodeRule:
        """The rule with every parameter off."""
        return cls(**{f.name: False if f.type in ("bool", bool) else None
                      for f in fields(cls)})
