"""StarCoder's per-extension thresholds: a CSV in the schema of bigcode-dataset's
preprocessing/visual_inspection.csv, read as filtering.py reads it, and the rule that
applies it (`extension_table`). docs/stages.md (`starcoder`) cites each line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .base import CodeDoc, CodeRule, doc


@dataclass(frozen=True)
class ExtensionThresholds:
    """One row of a per-extension table: include, longest line, mean line, alphanumeric
    and alphabetic fractions (None: that check is off)."""

    include: bool
    max_line: int | None
    mean_line: float | None
    alnum: float | None
    alpha: float | None


EXTENSION_TABLE_COLUMNS = ("language", "extension", "Include", "Long_line_threshold",
                           "Alphanum_threshold", "Alpha filter")


@dataclass(frozen=True)
class ExtensionTableRows:
    """A parsed per-extension table: `name` (the file it was read from: the stage reads
    it, filters do no I/O) and its rows, (language, extension) -> thresholds. Two tables
    compare by name."""

    name: str
    rows: Mapping[tuple[str, str], ExtensionThresholds] = field(compare=False, repr=False)


def parse_extension_table(text: str, name: str) -> ExtensionTableRows:
    """A CSV in the schema of bigcode-dataset's preprocessing/visual_inspection.csv:
    (language, extension) -> thresholds, read as filtering.py's `get_filter_params` reads
    a row (`Include` "1" keeps; an empty or zero threshold is off; a mean line of 100
    wherever a longest-line threshold is set). Raises ValueError naming the file (`name`)
    and row."""

    def number(row: dict[str, str], column: str, kind: type, line: int) -> Any:
        value = (row.get(column) or "").strip()
        if not value:
            return None
        try:
            parsed = kind(float(value)) if kind is int else kind(value)
        except ValueError:
            raise ValueError(f"{name}: row {line}: {column} {value!r} is not a number") from None
        return parsed or None  # 0 is off, as `if line_max and ...` in filtering.py

    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in EXTENSION_TABLE_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{name}: the extension table lacks the column(s) {missing} "
                         f"(needs {list(EXTENSION_TABLE_COLUMNS)})")
    table: dict[tuple[str, str], ExtensionThresholds] = {}
    for line, row in enumerate(reader, start=2):
        max_line = number(row, "Long_line_threshold", int, line)
        table[(row["language"], row["extension"])] = ExtensionThresholds(
            row["Include"].strip() == "1", max_line, 100.0 if max_line else None,
            number(row, "Alphanum_threshold", float, line),
            number(row, "Alpha filter", float, line))
    if not table:
        raise ValueError(f"{name}: the extension table has no rows")
    return ExtensionTableRows(name, table)


def bigcode_language(lang: str) -> str:
    """A linguist name as bigcode's table spells it (filtering.py's
    `language_format_from_dataset`: lower case, spaces as dashes, C#/F# spelled out)."""
    return {"C#": "c-sharp", "F#": "f-sharp"}.get(lang) or lang.lower().replace(" ", "-")


def file_extension(path: str | None) -> str:
    """The text after the file name's last dot; "" for none (The Stack's null `ext`)."""
    name = (path or "").replace("\\", "/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[1] if "." in name else ""


@dataclass(frozen=True)
class ExtensionTable(CodeRule):
    """StarCoder: thresholds per (language, extension) from a CSV in the schema of
    bigcode-dataset's preprocessing/visual_inspection.csv (filtering.py's
    `basic_filters_per_extension`). Where it is set it replaces the line-length and
    alphabetic-fraction rules, as the per-extension filter replaced the basic one."""

    # The manifest gives a file (a path parameter); the quality stage reads and parses it
    # (parse_extension_table) and the rule holds the rows.
    extension_table: ExtensionTableRows | None = field(default=None, metadata={**doc(
        "CSV of per-(language, extension) thresholds in the schema of bigcode-dataset's "
        "preprocessing/visual_inspection.csv (columns language, extension, Include, "
        "Long_line_threshold, Alphanum_threshold, Alpha filter). A file whose language "
        "and extension have no row, or a row without `Include` 1, is removed; set, it "
        "replaces max_line_length, mean_line_length and min_alpha_fraction."),
        "path": True})
    reasons = ("extension_excluded", "max_line_length", "mean_line_length",
               "alpha_fraction")

    def check(self, d: CodeDoc) -> str | None:
        if self.extension_table is None:
            return None
        key = (bigcode_language(d.lang or ""), file_extension(d.path))
        row = self.extension_table.rows.get(key)
        if row is None or not row.include:
            d.detail = (f"no row for language {key[0]!r}, extension {key[1]!r}" if row is None
                        else f"language {key[0]!r}, extension {key[1]!r}: Include is not 1")
            return "extension_excluded"
        m = d.metrics
        if row.max_line is not None and m.max_line_length > row.max_line:
            return "max_line_length"
        if row.mean_line is not None and m.mean_line_length > row.mean_line:
            return "mean_line_length"
        if m.chars and row.alnum is not None and m.alnum_fraction < row.alnum:
            return "alpha_fraction"
        if m.chars and row.alpha is not None and m.alpha_fraction < row.alpha:
            return "alpha_fraction"
        return None
