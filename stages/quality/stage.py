"""Quality filters: The Stack/StarCoder rules for code, Gopher/C4/FineWeb rules for text.

Manifest shape (every key optional):

    - quality:
        code:
          preset: starcoder2            # starcoder2 | starcoder | the-stack | none
          max_line_length: 1000         # any threshold: overrides the preset for all languages
          languages:                    # per language (The Stack's names, any case)
            Markdown: {max_line_length: 100000, mean_line_length: null}
        text:
          preset: refinedweb            # refinedweb | gopher | c4 | fineweb | none
          gopher_quality: {min_doc_words: 50}   # a mapping: on, with these thresholds;
          c4: false                     # false: off; true: on with datatrove's defaults
          per_source:                   # a whole text config for a named source
            package-descriptions: {preset: none}

A threshold set to null switches its rule off. Code thresholds resolve as:
preset defaults < manifest top level < preset's language entry < manifest's
language entry. Reasons are rule names (`max_line_length`, `encoded_data`,
`gopher_quality/gopher_short_doc`, `c4/curly_bracket`, ...); metric columns
`q_*` are added for every document the stage sees.

go-enry's file classes are code rules too, each switched on with `true`: `vendored`,
`generated`, `documentation`, `dotfile`, `configuration`, `test` (starcoder2 turns on
`generated`, the one its paper names). Where the input says whether a file is generated or
vendored (the `generated` and `vendor` columns, The Stack v2's `is_generated` /
`is_vendor`), that verdict is used and go-enry is not asked; where it says whether it
is generated, the marker rule (`auto_generated`) is not run again either.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ...filters.quality import code_rules
from ..base import DocumentStage, ShardContext, StageParams, StageResult
from ..explain import Span, number
from .code_params import CodeQualityParams, CodeThresholdTable
from .text_params import TextQualityParams

if TYPE_CHECKING:  # text_rules imports datatrove (~0.2 s); the driver needs only the Params
    from ...filters.quality.text_rules import TextRule


class QualityParams(StageParams):
    code: CodeQualityParams | None = CodeQualityParams()
    """Rules for kind=code documents; null passes code through."""
    text: TextQualityParams | None = TextQualityParams()
    """Rules for kind=text documents; null passes text through."""


_CODE_COLUMNS = [pa.field("q_lines", pa.int64()), pa.field("q_max_line", pa.int64()),
                 pa.field("q_mean_line", pa.float32()), pa.field("q_alpha_frac", pa.float32()),
                 pa.field("q_encoded_frac", pa.float32())]
_TEXT_COLUMNS = [pa.field("q_words", pa.int64()), pa.field("q_mean_word_len", pa.float32())]


class Quality(DocumentStage[QualityParams]):
    name = "quality"
    about = (
        "heuristic quality rules (The Stack / StarCoder for code; Gopher, "
        "C4, FineWeb for text)")
    # MB/s per core (code, text); docs/benchmarks.md. Text: 3.3-4.1 with the default
    # preset on real English, a fresh process (2026-12-02, two runs at load 4-7; 3.0-3.7
    # fineweb, 5.1-5.3 c4): `python -m tests.bench.bench_quality_text`, charged under.
    rate_mb_s = (35.0, 3.0)
    Params = QualityParams

    def key_params(self) -> str:
        # exclude_unset: an explicit null (rule off) must not share a key with "as preset"
        return self.params.model_dump_json(exclude_unset=True)

    def setup(self) -> None:
        self._code_table  # noqa: B018 - build once per worker
        # The text rules are built at the first shard with text: they import datatrove's
        # filters (~0.35 s of CPU per worker), which a shard of code alone never needs.

    @cached_property
    def _code_table(self) -> CodeThresholdTable | None:
        p = self.params
        return CodeThresholdTable(p.code) if p.code is not None else None

    @cached_property
    def _text_rules(self) -> dict[str | None, list[TextRule]]:
        p = self.params
        if p.text is None:
            return {}
        rules: dict[str | None, list[TextRule]] = {None: p.text.rules()}
        for source, config in sorted(p.text.per_source.items()):
            rules[source] = config.rules()
        return rules

    def added_columns(self) -> list[pa.Field]:
        return _CODE_COLUMNS + _TEXT_COLUMNS

    @classmethod
    def locate(cls, doc: dict[str, Any], entry: dict[str, Any]) -> list[Span]:
        """A code document removed for its longest line: that line."""
        if doc.get("reason") != "quality:max_line_length":
            return []
        text, start, best = doc["text"], 0, (0, 0)
        for line in text.split("\n"):
            if len(line) > best[1] - best[0]:
                best = (start, start + len(line))
            start += len(line) + 1
        return [Span(best[0], best[1], f"longest line ({best[1] - best[0]:,} characters)")]

    @classmethod
    def explain(cls, doc: dict[str, Any], entry: dict[str, Any], work: Any) -> list[str]:
        """The metrics against the thresholds of the document's language (code), or the
        word counts and the rule that removed it (text: Gopher-style rule sets)."""
        params = cls.Params.model_validate(entry.get("given") or {})
        assert isinstance(params, QualityParams)
        if doc.get("kind") == "code" and params.code is not None:
            t = CodeThresholdTable(params.code).get(doc.get("lang"))
            checks = [("lines", doc.get("q_lines"), "<=", t.max_lines),
                      ("longest line", doc.get("q_max_line"), "<=", t.max_line_length),
                      ("mean line", doc.get("q_mean_line"), "<=", t.mean_line_length),
                      ("alphabetic share", doc.get("q_alpha_frac"), ">=", t.min_alpha_fraction),
                      ("encoded share", doc.get("q_encoded_frac"), "<=", t.encoded_max_fraction)]
            parts = [f"{name} {number(value)} ({op} {number(bound)})" if bound is not None
                     else f"{name} {number(value)} (off)"
                     for name, value, op, bound in checks if value is not None]
            return [f"preset {params.code.preset} for {doc.get('lang') or 'any language'}: "
                    + ", ".join(parts)] if parts else []
        if doc.get("kind") == "text" and params.text is not None:
            words = doc.get("q_words")
            line = f"preset {params.text.preset}"
            if words is not None:
                line += f": {words:,} words, mean word length {number(doc.get('q_mean_word_len'))}"
            return [line]
        return []

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        n = docs.num_rows
        kinds = docs.column("kind").to_pylist()
        reasons: list[str | None] = [None] * n
        details: list[str | None] = [None] * n
        columns: dict[str, list[Any]] = {f.name: [None] * n for f in self.added_columns()}
        text_column = docs.column("text")
        code_rows = [i for i, k in enumerate(kinds) if k == "code"]
        if self._code_table is not None and code_rows:
            self._code(docs, code_rows, reasons, details, columns)
        text_rows = [i for i, k in enumerate(kinds) if k == "text"]
        edited: dict[int, str] = {}
        if text_rows and self._text_rules:
            edited = self._text(docs, text_rows, reasons, columns)
        table = docs
        if edited:
            texts = text_column.to_pylist()
            for i, text in edited.items():
                texts[i] = text
            index = table.schema.get_field_index("text")
            table = table.set_column(index, table.schema.field("text"),
                                     pa.array(texts, table.schema.field("text").type))
        for field in self.added_columns():
            values = pa.array(columns[field.name], field.type)
            index = table.schema.get_field_index(field.name)
            table = (table.set_column(index, field, values) if index >= 0
                     else table.append_column(field, values))
        return StageResult(table, pa.array(reasons, pa.string()), pa.array(details, pa.string()))

    def _code(self, docs: pa.Table, rows: list[int], reasons: list[str | None],
              details: list[str | None], columns: dict[str, list[Any]]) -> None:
        table = self._code_table
        assert table is not None
        take = pa.array(rows, pa.int64())
        texts = docs.column("text").take(take)
        langs = docs.column("lang").take(take).to_pylist()
        paths = docs.column("path").take(take).to_pylist()
        generated = _flags(docs, "generated", take)
        vendor = _flags(docs, "vendor", take)
        # Where the dataset says whether a file is generated or vendored (The Stack v2's
        # is_generated / is_vendor, go-enry's verdicts), that stands: go-enry is not
        # asked again, and the marker rule does not run.
        known = [{"generated": g, "vendored": v} for g, v in zip(generated, vendor, strict=True)]
        found, why, metrics = code_rules.evaluate(texts, [table.get(lang) for lang in langs],
                                                  paths, known, langs)
        for j, i in enumerate(rows):
            details[i] = why[j]
        names = {"q_lines": "lines", "q_max_line": "max_line_length",
                 "q_mean_line": "mean_line_length", "q_alpha_frac": "alpha_fraction",
                 "q_encoded_frac": "encoded_fraction"}
        rounded = {col: np.round(metrics[key], 4).tolist() if metrics[key].dtype.kind == "f"
                   else metrics[key].tolist() for col, key in names.items()}
        for j, i in enumerate(rows):
            reasons[i] = found[j]
            for col in names:
                columns[col][i] = rounded[col][j]

    def _text(self, docs: pa.Table, rows: list[int], reasons: list[str | None],
              columns: dict[str, list[Any]]) -> dict[int, str]:
        from ...filters.quality.text_rules import check_text, word_metrics

        rules = self._text_rules
        texts = docs.column("text").take(pa.array(rows, pa.int64())).to_pylist()
        sources = docs.column("source").take(pa.array(rows, pa.int64())).to_pylist()
        edited: dict[int, str] = {}
        for i, text, source in zip(rows, texts, sources, strict=True):
            chosen = rules.get(source, rules[None])
            if chosen:
                words, mean_len = word_metrics(text, chosen[0].filter.language)
                columns["q_words"][i], columns["q_mean_word_len"][i] = words, round(mean_len, 4)
            reason, after = check_text(text, chosen)
            reasons[i] = reason
            if reason is None and after != text:
                edited[i] = after
        return edited


def _flags(docs: pa.Table, column: str, take: pa.Array) -> list[bool | None]:
    """A dataset's own per-file flag (generated, vendor) for the rows `take` picks; all
    None where the table has no such column (documents from before it existed)."""
    if column not in docs.column_names:
        return [None] * len(take)
    return docs.column(column).take(take).to_pylist()
