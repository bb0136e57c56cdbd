"""Rules on a file's size, lines and share of letters, decided on its `LineMetrics`
(filters/quality/code_metrics.py): JSON/YAML size bounds, line count, longest and mean
line, alphabetic (or alphanumeric) fraction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .base import CodeDoc, CodeRule, doc


@dataclass(frozen=True)
class SizeBounds(CodeRule):
    """JSON/YAML (StarCoder): very small files are stubs, very large ones data dumps."""

    min_chars: int | None = field(default=None, metadata=doc(
        "Fewest characters (StarCoder: 50 for JSON and YAML)."))
    max_chars: int | None = field(default=None, metadata=doc(
        "Most characters (StarCoder: 5000 for JSON and YAML)."))
    reasons = ("too_small", "too_large")

    def check(self, d: CodeDoc) -> str | None:
        if self.min_chars is not None and d.metrics.chars < self.min_chars:
            return "too_small"
        if self.max_chars is not None and d.metrics.chars > self.max_chars:
            return "too_large"
        return None


@dataclass(frozen=True)
class MaxLines(CodeRule):
    """StarCoder2: files of more than 100k lines are data or generated code."""

    max_lines: int | None = field(default=100_000, metadata=doc(
        "Most lines (StarCoder2: 100000)."))
    reasons = ("too_many_lines",)

    def check(self, d: CodeDoc) -> str | None:
        if self.max_lines is not None and d.metrics.lines > self.max_lines:
            return "too_many_lines"
        return None


@dataclass(frozen=True)
class LineLength(CodeRule):
    """The Stack: minified or data files have a very long longest line or long lines on
    average."""

    max_line_length: int | None = field(default=1000, metadata=doc(
        "Longest line allowed (The Stack: 1000)."))
    mean_line_length: float | None = field(default=100.0, metadata=doc(
        "Highest mean line length (The Stack: 100)."))
    reasons = ("max_line_length", "mean_line_length")

    def check(self, d: CodeDoc) -> str | None:
        m = d.metrics
        if self.max_line_length is not None and m.max_line_length > self.max_line_length:
            return "max_line_length"
        if self.mean_line_length is not None and m.mean_line_length > self.mean_line_length:
            return "mean_line_length"
        return None


@dataclass(frozen=True)
class AlphaFraction(CodeRule):
    """StarCoder: under 25% alphabetic characters means numbers, tables or binary-ish data."""

    min_alpha_fraction: float | None = field(default=0.25, metadata=doc(
        "Least share of alphabetic characters (StarCoder: 0.25)."))
    alpha_counts_digits: bool = field(default=False, metadata=doc(
        "Count digits as letters for the fraction above (The Stack v1; assembly)."))
    reasons = ("alpha_fraction",)

    def check(self, d: CodeDoc) -> str | None:
        m = d.metrics
        if self.min_alpha_fraction is None or m.chars == 0:  # StarCoder: empty files pass
            return None
        value = m.alnum_fraction if self.alpha_counts_digits else m.alpha_fraction
        return "alpha_fraction" if value < self.min_alpha_fraction else None
