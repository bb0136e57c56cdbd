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

from functools import cache, cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from ..filters.langid.code import stack_name
from ..filters.quality import code_rules
from .base import DocumentStage, ShardContext, StageParams, StageResult
from .explain import Span, number
from .paths import LocalPath
from .user_file import read_user_file

if TYPE_CHECKING:  # text_rules imports datatrove (~0.2 s); the driver needs only the Params
    from ..filters.quality.text_rules import TextRule


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- code -----------------------------------------------------------------------------


def _overrides_fields() -> dict[str, Any]:
    """One optional field per parameter of the code rules (filters/quality/code_rules/):
    the rule classes declare them, the manifest's keys follow."""
    def typed(name: str, kind: Any) -> Any:  # a file's name is resolved like other paths
        return LocalPath if code_rules.parameter_is_path(name) else kind

    return {name: (typed(name, kind) | None,
                   Field(None, description=code_rules.parameter_doc(name)))
            for name, (_, kind) in code_rules.PARAMETERS.items()}


class _CodeRuleOverridesBase(_Strict):
    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)

    @model_validator(mode="after")
    def _readable_extension_table(self) -> _CodeRuleOverridesBase:
        path = getattr(self, "extension_table", None)
        if path is not None:
            load_extension_table(path)  # ValueError: the file, row or column
        return self


EXTENSION_TABLE_MAX_BYTES = 64 * 2**20  # bigcode's own table is ~30 KB


@cache
def load_extension_table(path: str) -> code_rules.ExtensionTableRows:
    """The `extension_table` file, read here (a bounded regular file; filters do no I/O)
    and parsed by the rule's module. ValueError names the file, and the row or column."""
    try:
        raw = read_user_file(path, what="extension_table", max_bytes=EXTENSION_TABLE_MAX_BYTES)
    except OSError as e:
        raise ValueError(f"cannot read the extension table {path}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: the extension table is not UTF-8 (byte {e.start})") from None
    return code_rules.parse_extension_table(text, path)


def _loaded(changes: dict[str, Any]) -> dict[str, Any]:
    """Rule parameters as the rules take them: a table's file replaced by its rows."""
    table = changes.get("extension_table")
    return changes if table is None else {**changes, "extension_table": load_extension_table(table)}


# The fields come from the rule classes, so the overrides cannot drift from the rules.
CodeRuleOverrides = create_model(
    "CodeRuleOverrides", __base__=_CodeRuleOverridesBase,
    __doc__="Code rule parameters; a key left out keeps the preset's value, null turns "
            "the rule off.", **_overrides_fields())


class CodeQualityParams(CodeRuleOverrides):
    preset: Literal["starcoder2", "starcoder", "the-stack", "none"] = "starcoder2"
    """Where defaults and per-language exemptions come from (code_rules/presets.py)."""
    languages: dict[str, CodeRuleOverrides] = {}  # pyright: ignore[reportInvalidTypeForm]  # a created model
    """Per programming language overrides, applied last."""

    def changes(self) -> dict[str, Any]:
        return {k: v for k, v in super().changes().items() if k not in ("preset", "languages")}


class CodeThresholdTable:
    """Resolved rules per language, computed once per language."""

    def __init__(self, params: CodeQualityParams) -> None:
        preset = code_rules.CODE_PRESETS[params.preset]
        self._base = preset.default.updated(_loaded(params.changes()))
        # Keys and labels meet in The Stack's names, any case (`Wolfram Language` is
        # Mathematica's entry).
        self._preset_langs = {_key(k): v for k, v in preset.languages.items()}
        self._manifest_langs = {_key(k): _loaded(v.changes()) for k, v in params.languages.items()}
        self._resolved: dict[str, code_rules.CodeRules] = {}

    def get(self, lang: str | None) -> code_rules.CodeRules:
        key = _key(lang or "")
        if key not in self._resolved:
            value = self._base.updated(self._preset_langs.get(key, {}))
            self._resolved[key] = value.updated(self._manifest_langs.get(key, {}))
        return self._resolved[key]


def _key(language: str) -> str:
    return stack_name(language).lower()


# --- text -----------------------------------------------------------------------------


class GopherQualityParams(_Strict):
    """datatrove GopherQualityFilter thresholds (Gopher, Rae et al. 2021, table A1)."""

    min_doc_words: int | None = 50
    """Fewest words that contain a non-punctuation character."""
    max_doc_words: int | None = 100_000
    """Most such words."""
    min_avg_word_length: int | None = 3
    """Lowest mean word length."""
    max_avg_word_length: int | None = 10
    """Highest mean word length."""
    max_symbol_word_ratio: float | None = 0.1
    """Most '#' or ellipses per word."""
    max_bullet_lines_ratio: float | None = 0.9
    """Most lines starting with a bullet."""
    max_ellipsis_lines_ratio: float | None = 0.3
    """Most lines ending with an ellipsis."""
    max_non_alpha_words_ratio: float | None = 0.8
    """Least share of words with a letter (datatrove's name is inverted)."""
    min_stop_words: int | None = 2
    """Fewest distinct stop words present."""
    stop_words: list[str] | None = None
    """Stop words (default: the, be, to, of, and, that, have, with)."""


class GopherRepetitionParams(_Strict):
    """datatrove GopherRepetitionFilter thresholds (Gopher table A1)."""

    dup_line_frac: float | None = 0.3
    """Most share of lines that repeat an earlier line."""
    dup_para_frac: float | None = 0.3
    """Most share of paragraphs that repeat an earlier one."""
    dup_line_char_frac: float | None = 0.2
    """Most share of characters in repeated lines."""
    dup_para_char_frac: float | None = 0.2
    """Most share of characters in repeated paragraphs."""
    top_n_grams: list[tuple[int, float]] = [(2, 0.2), (3, 0.18), (4, 0.16)]
    """(n, most share of characters in the most frequent n-gram)."""
    dup_n_grams: list[tuple[int, float]] = [(5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12),
                                            (9, 0.11), (10, 0.10)]
    """(n, most share of characters in repeated n-grams)."""


class C4Params(_Strict):
    """datatrove C4QualityFilter switches (Raffel et al. 2020)."""

    split_paragraph: bool = True
    """Judge lines (true, as C4) or sentences."""
    remove_citations: bool = True
    """Strip [1]-style citations before judging a line."""
    filter_no_terminal_punct: bool = True
    """Drop lines not ending in terminal punctuation (FineWeb turns this off)."""
    min_num_sentences: int = 5
    """Fewest sentences left after line filtering (-1: off)."""
    min_words_per_line: int = 3
    """Lines with fewer words are dropped (-1: off)."""
    max_word_length: int = 1000
    """Lines with a longer word are dropped (-1: off)."""
    filter_lorem_ipsum: bool = True
    """Drop documents containing 'lorem ipsum'."""
    filter_javascript: bool = True
    """Drop lines mentioning javascript."""
    filter_curly_bracket: bool = True
    """Drop documents containing '{'."""
    filter_policy: bool = True
    """Drop lines about cookies and terms of use."""
    edit_text: bool = False
    """Keep C4's line removals in the text (false: only decide, the text stays as is)."""


class FineWebParams(_Strict):
    """datatrove FineWebQualityFilter thresholds (FineWeb, Penedo et al. 2024)."""

    line_punct_thr: float = 0.12
    """Least share of lines ending in terminal punctuation."""
    line_punct_exclude_zero: bool = False
    """Do not drop documents where no line ends in punctuation."""
    short_line_thr: float = 0.67
    """Most share of short lines."""
    short_line_length: int = 30
    """A line this long or shorter is short."""
    char_duplicates_ratio: float = 0.01
    """Most share of characters in duplicated lines."""
    new_line_ratio: float = 0.3
    """Most newlines per word."""


_TEXT_PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    # RefinedWeb's document-wise filters are Gopher's repetition and quality rules.
    "refinedweb": {"gopher_repetition": {}, "gopher_quality": {}},
    "gopher": {"gopher_repetition": {}, "gopher_quality": {}},
    "c4": {"c4": {}},
    # FineWeb's pipeline: Gopher rep + quality, C4 without the punctuation rule, FineWeb's own.
    "fineweb": {"gopher_repetition": {}, "gopher_quality": {},
                "c4": {"filter_no_terminal_punct": False}, "fineweb": {}},
    "none": {},
}
_TEXT_MODELS: dict[str, type[_Strict]] = {
    "gopher_repetition": GopherRepetitionParams, "gopher_quality": GopherQualityParams,
    "c4": C4Params, "fineweb": FineWebParams,
}


class TextQualityConfig(_Strict):
    preset: Literal["refinedweb", "gopher", "c4", "fineweb", "none"] = "refinedweb"
    """Which rules run by default: refinedweb and gopher = Gopher repetition + quality;
    c4 = C4; fineweb = Gopher repetition + quality, C4 (no punctuation rule), FineWeb."""
    gopher_repetition: GopherRepetitionParams | bool | None = None
    """null: as the preset; false: off; true: on with defaults; a mapping: on with these."""
    gopher_quality: GopherQualityParams | bool | None = None
    """As gopher_repetition."""
    c4: C4Params | bool | None = None
    """As gopher_repetition."""
    fineweb: FineWebParams | bool | None = None
    """As gopher_repetition."""
    tokenizer: Literal["regex", "spacy"] = "regex"
    """Word splitter handed to datatrove: our spaCy-compatible regex (fast), or datatrove's
    spaCy English (needs `spacy`; the text rules run about 5x slower with it,
    tests/bench/bench_filters.py)."""

    def rules(self) -> list[TextRule]:
        from ..filters.quality.text_rules import (
            TEXT_FILTER_NAMES,
            RegexWordTokenizer,
            build_rule,
        )

        splitter: RegexWordTokenizer | str = ("en" if self.tokenizer == "spacy"
                                              else RegexWordTokenizer())
        chosen = _TEXT_PRESETS[self.preset]
        rules = []
        for name in TEXT_FILTER_NAMES:
            setting = getattr(self, name)
            if setting is False or (setting is None and name not in chosen):
                continue
            given = setting.model_dump(exclude_unset=True) if isinstance(setting, _Strict) else {}
            # The preset's values (FineWeb's C4 variant), then the manifest's on top.
            thresholds = _TEXT_MODELS[name](**{**chosen.get(name, {}), **given}).model_dump()
            edit = bool(thresholds.pop("edit_text", False))
            rules.append(build_rule(name, thresholds, splitter, edit))
        return rules


class TextQualityParams(TextQualityConfig):
    per_source: dict[str, TextQualityConfig] = {}
    """A whole text configuration for named sources, instead of the one above."""


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
    rate_mb_s = (35.0, 0.8)  # MB/s per core (code, text); docs/benchmarks.md
    Params = QualityParams

    def cache_key(self) -> str:
        # exclude_unset: an explicit null (rule off) must not share a key with "as preset".
        return f"{type(self).__qualname__}:{self.params.model_dump_json(exclude_unset=True)}"

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
        from ..filters.quality.text_rules import check_text, word_metrics

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
