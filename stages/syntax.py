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
import pyarrow.compute as pc
from pydantic import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, field_validator

from ..filters.syntax import check as syntax_check
from .base import DocumentStage, ShardContext, StageParams, StageResult
from .explain import Span, number
from .hooks import BarChart, StatsEntry, human

# Calibrated on real files (tests/calibration/, table in docs/stages.md). Two signals: the
# grammar's error share and MISSING tokens, and what the file leaves unclosed
# (`unbalanced`: brackets, `#if`/`#endif`, always-closed HTML elements). Where the
# grammar parses every real file (Python, Java, Go, ...; TypeScript, TSX and C# once
# syntax_mask has blanked what their grammars cannot read) any error rejects; PHP's
# balance adds what its grammar reads as text (a file that lost its `<?php` line). HTML
# and CSS are judged as browsers read them (WHATWG HTML's parsing algorithm, CSS Syntax
# 3): no input is rejected, a bad tag or declaration is skipped. tree-sitter-html errs on
# Jinja templates' nested quotes and `<?xml`, tree-sitter-css on Bootstrap's IE hacks
# (`*zoom: 1`, `\9`, `filter: progid:...`), so their grammars reject nothing; balance
# does: an element whose end tag HTML requires left open (html5lib's
# "expected-closing-tag-but-got-eof"), a CSS bracket left open (docs/stages.md has the
# measure, with html5lib as HTML's oracle). C and C++
# grammars err on a third of valid files (macros), Shell's on valid heredocs and `case`
# forms as often as on damaged files, so the grammar does not reject there (share 1.0);
# balance does (keywords, quotes and heredocs too in Shell).
DEFAULT_MAX_ERROR_SHARE: dict[str, float] = {
    "default": 0.0,
    "HTML": 1.0,
    "CSS": 1.0,
    "Shell": 1.0,
    "C": 1.0,
    "C++": 1.0,
}
DEFAULT_MAX_MISSING: dict[str, int] = {
    "default": 0,
    "HTML": 1_000_000,
    "CSS": 1_000_000,
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
    C++, C#; in HTML, elements whose end tag is required (`div`, `table`, `script`...)
    left open, and a page that ends inside a tag or comment; if/fi, case/esac, do/done,
    brackets, quotes and heredocs in Shell; other languages count none). Same merging."""
    max_bytes: PositiveInt = 1_000_000
    """Larger files are dropped as `too_large_to_parse` (parse time and tree memory
    grow with size; The Stack's own filters drop files over 1 MB)."""
    timeout_s: PositiveFloat = 5.0
    """A parse using more CPU time than this (its thread's, so a loaded machine does not
    drop more files) is cancelled and the file dropped as `parse_timeout`."""

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
    about = (
        "tree-sitter parse; removes files whose share of bytes under "
        "ERROR/MISSING nodes is over the language's threshold")
    rate_mb_s = (1.9, 1000.0)  # MB/s per core (code, text); docs/benchmarks.md
    profile_columns = ("syntax_checked", "syntax_clean")

    @classmethod
    def profile(cls, docs: pa.Table) -> dict[str, Any]:
        """Per language of the output: documents checked, and those without any error."""
        if not set(cls.profile_columns) <= set(docs.column_names):
            return {}
        checked = pa.table({"lang": docs.column("lang"),
                            "clean": pc.fill_null(docs.column("syntax_clean"), False)
                            .cast(pa.int64())}).filter(
            pc.fill_null(docs.column("syntax_checked"), False))
        rows = checked.group_by(["lang"]).aggregate([([], "count_all"),
                                                     ("clean", "sum")]).to_pylist()
        return {"syntax": {r["lang"]: {"checked": int(r["count_all"]),
                                       "clean": int(r["clean_sum"] or 0)} for r in rows}}

    @classmethod
    def figures(cls, entry: StatsEntry, stats: dict[str, Any]) -> list[BarChart]:
        """Per language: the share the stage removed, the share kept despite some errors."""
        checked = (stats.get("profile") or {}).get("syntax") or {}
        # documents the stage parsed, per language (languages without a grammar pass unchecked)
        parsed = ((entry.get("by_flag") or {}).get("syntax_checked") or {}).get("true")
        rows = []
        for lang, counts in (parsed or entry["by_lang"]).items():
            seen = counts["kept"]["docs"] + counts["removed"]["docs"]
            mine = checked.get(lang, {})
            if not mine.get("checked") and not counts["removed"]["docs"]:
                continue  # a language the stage has no grammar for
            kept_bad = (mine["checked"] - mine.get("clean", 0)) / mine["checked"] \
                if mine.get("checked") else 0.0
            rows.append((lang, counts["removed"]["docs"] / seen if seen else 0.0, kept_bad, seen))
        if not rows:
            return []
        rows.sort(key=lambda r: (-r[3], r[0]))
        return [BarChart(
            "syntax_errors", "Syntax error rate per language",
            "Share of each language's documents the syntax stage removed, and share of "
            "the kept ones that still hold error nodes under the threshold; in brackets "
            "the documents the stage parsed.",
            "Syntax errors per language (tree-sitter)",
            [f"{r[0]}\n({human(r[3])})" for r in rows],
            [("removed (error share over the threshold)", "#e15759", [r[1] for r in rows]),
             ("kept with some error nodes (share of checked output)", "#f28e2b",
              [r[2] for r in rows])],
            "share of documents")]
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
