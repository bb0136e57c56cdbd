"""Syntax validation: parse code with tree-sitter, drop files too broken to teach from.

The metrics are the share of a file's bytes under ERROR nodes, the count of
MISSING nodes (tokens the parser had to invent, which span no bytes), and the
count of openers and closers left unmatched (brackets, `#if`, HTML elements). Plain
`has_error` would be wrong as a rule: it rejects a third of real C and C++
(macros the grammar cannot expand), so every threshold is per language and
calibrated on real files (tests/calibration/, numbers in docs/stages.md).

Documents in a language without a grammar pass through with
`syntax_checked = false`. One parser per language is built once per worker
and reused; a size cap and a parse timeout bound the cost of one file.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pydantic import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, field_validator

from ..filters.syntax import check as syntax_check
from .base import DocumentStage, ShardContext, StageParams, StageResult
from .explain import Span, number

# Calibrated on real files (tests/calibration/, table in docs/stages.md). Two signals: the
# grammar's error share and MISSING tokens, and what the file leaves unclosed
# (`unbalanced`: brackets, `#if`/`#endif`, always-closed HTML elements). Where the
# grammar parses every real file (Python, Java, Go, ...; TypeScript, TSX and C# once
# syntax_mask has blanked what their grammars cannot read) any error rejects; PHP's
# balance adds what its grammar reads as text (a file that lost its `<?php` line). HTML and
# CSS grammars err on small valid constructs (`<?xml`, `! important`): up to 5% of the
# bytes passes, balance catches the damage. C and C++ grammars err on a third of valid files
# (macros), Shell's on valid heredocs and `case` forms as often as on damaged files, so
# the grammar does not reject there (share 1.0); balance does (keywords, quotes and
# heredocs too in Shell).
DEFAULT_MAX_ERROR_SHARE: dict[str, float] = {
    "default": 0.0,
    "HTML": 0.05,
    "CSS": 0.05,
    "Shell": 1.0,
    "C": 1.0,
    "C++": 1.0,
}
DEFAULT_MAX_MISSING: dict[str, int] = {
    "default": 0,
    "Shell": 1_000_000,
    "C": 1_000_000,
    "C++": 1_000_000,
}
DEFAULT_MAX_UNBALANCED: dict[str, int] = {"default": 0}


def _merged(defaults: dict, given: dict) -> dict:
    unknown = sorted(set(given) - {"default", *syntax_check.GRAMMARS})
    if unknown:
        raise ValueError(f"no grammar for {unknown}; known: default, "
                         f"{', '.join(sorted(syntax_check.GRAMMARS))}")
    return {**defaults, **given}


class SyntaxParams(StageParams):
    max_error_share: dict[str, NonNegativeFloat] = DEFAULT_MAX_ERROR_SHARE
    """Per language (The Stack names, or `default`): largest share of bytes under ERROR
    nodes that is kept. Keys given here override the calibrated defaults one by one."""
    max_missing: dict[str, NonNegativeInt] = DEFAULT_MAX_MISSING
    """Per language: most MISSING nodes (invented tokens) kept. Same merging."""
    max_unbalanced: dict[str, NonNegativeInt] = DEFAULT_MAX_UNBALANCED
    """Per language: most unmatched openers/closers kept (brackets outside strings and
    comments in C, C++, CSS, PHP (and braces of its inline HTML); `#if`/`#endif` in C,
    C++, C#; always-closed elements such as
    `div`, `table`, `script` in HTML; if/fi, case/esac, do/done, brackets, quotes and
    heredocs in Shell; other languages count none). Same merging."""
    max_bytes: PositiveInt = 1_000_000
    """Larger files are dropped as `too_large_to_parse` (parse time and tree memory
    grow with size; The Stack's own filters drop files over 1 MB)."""
    timeout_s: PositiveFloat = 5.0
    """A parse running longer is cancelled and the file dropped as `parse_timeout`."""

    @field_validator("max_error_share")
    @classmethod
    def _shares(cls, value: dict[str, float]) -> dict[str, float]:
        return _merged(DEFAULT_MAX_ERROR_SHARE, value)

    @field_validator("max_missing")
    @classmethod
    def _missing(cls, value: dict[str, int]) -> dict[str, int]:
        return _merged(DEFAULT_MAX_MISSING, value)

    @field_validator("max_unbalanced")
    @classmethod
    def _unbalanced(cls, value: dict[str, int]) -> dict[str, int]:
        return _merged(DEFAULT_MAX_UNBALANCED, value)

    def unbalanced_for(self, language: str) -> int:
        return self.max_unbalanced.get(language, self.max_unbalanced["default"])

    def share_for(self, language: str) -> float:
        return self.max_error_share.get(language, self.max_error_share["default"])

    def missing_for(self, language: str) -> int:
        return self.max_missing.get(language, self.max_missing["default"])


COLUMNS = [
    pa.field("syntax_checked", pa.bool_()),
    pa.field("syntax_clean", pa.bool_()),
    pa.field("syntax_error_nodes", pa.int32()),
    pa.field("syntax_missing_nodes", pa.int32()),
    pa.field("syntax_error_share", pa.float64()),
    pa.field("syntax_unbalanced", pa.int32()),
]


class Syntax(DocumentStage[SyntaxParams]):
    name = "syntax"
    count_columns = ("syntax_checked",)
    Params = SyntaxParams

    def __init__(self, params: SyntaxParams) -> None:
        super().__init__(params)
        self._checkers: dict[str, syntax_check.Checker] = {}

    def setup(self) -> None:
        self._checkers = {language: syntax_check.Checker(language)
                          for language in sorted(syntax_check.GRAMMARS)}

    def added_columns(self) -> list[pa.Field]:
        return list(COLUMNS)

    @classmethod
    def explain(cls, doc: dict[str, Any], entry: dict[str, Any], work: Any) -> list[str]:
        """The error share against the language's bound, MISSING nodes, imbalance."""
        if not doc.get("syntax_checked"):
            lang = doc.get("lang") or "no language"
            return [f"not parsed ({lang}: no grammar, or removed before the check)"]
        params = SyntaxParams.model_validate(entry.get("params") or {})
        lang = doc["lang"]
        return [f"error share {number(doc.get('syntax_error_share'))} (<= "
                f"{number(params.share_for(lang))} for {lang}), "
                f"{doc.get('syntax_error_nodes')} ERROR and {doc.get('syntax_missing_nodes')} "
                f"MISSING nodes (<= {params.missing_for(lang)}), unbalanced "
                f"{doc.get('syntax_unbalanced')} (<= {params.unbalanced_for(lang)})"]

    @classmethod
    def locate(cls, doc: dict[str, Any], entry: dict[str, Any]) -> list[Span]:
        """The first ERROR or MISSING node of the document as its grammar parses it."""
        lang = doc.get("lang")
        if lang not in syntax_check.GRAMMARS or not doc.get("syntax_checked"):
            return []
        if "syntax_error_nodes" in doc and not (doc.get("syntax_error_nodes")
                                                or doc.get("syntax_missing_nodes")):
            return []  # the stage found nothing: no parse needed to say so
        data = doc["text"].encode("utf-8", "surrogatepass")
        tree = syntax_check.parse(syntax_check.Checker(lang).parser, data, 10.0)
        errors, missing = syntax_check.error_spans(tree.root_node)
        nodes = sorted([(n.start_byte, n.end_byte, "syntax error") for n in errors]
                       + [(n.start_byte, n.end_byte, "missing token") for n in missing])
        spans = []
        for start, end, label in nodes[:3]:
            begin = len(data[:start].decode("utf-8", "ignore"))
            spans.append(Span(begin, begin + len(data[start:max(end, start + 1)]
                                                 .decode("utf-8", "ignore")), label))
        return spans

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        p = self.params
        if not self._checkers:
            self.setup()
        n = docs.num_rows
        checked: list[bool] = [False] * n
        clean: list[bool | None] = [None] * n
        errors: list[int | None] = [None] * n
        missing: list[int | None] = [None] * n
        shares: list[float | None] = [None] * n
        unbalanced: list[int | None] = [None] * n
        reasons: list[str | None] = [None] * n
        languages = docs.column("lang").to_pylist()
        texts = docs.column("text")
        for i, language in enumerate(languages):
            checker = self._checkers.get(language)
            if checker is None:
                continue
            data = texts[i].as_py().encode("utf-8", "surrogatepass")
            if len(data) > p.max_bytes:
                reasons[i] = "too_large_to_parse"
                continue
            try:
                report = checker.check_file(data, p.timeout_s)
            except syntax_check.ParseTimeout:
                reasons[i] = "parse_timeout"
                continue
            checked[i] = True
            clean[i] = report.clean
            errors[i] = report.error_nodes
            missing[i] = report.missing_nodes
            shares[i] = report.error_share
            unbalanced[i] = report.unbalanced
            reasons[i] = syntax_check.rejects(report, p.share_for(language),
                                              p.missing_for(language),
                                              p.unbalanced_for(language))
        table = docs
        for field, values in zip(COLUMNS, [checked, clean, errors, missing, shares,
                                           unbalanced],
                                 strict=True):
            table = table.append_column(field, pa.array(values, field.type))
        return StageResult(table, pa.array(reasons, pa.string()))
