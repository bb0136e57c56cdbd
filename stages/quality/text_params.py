"""The quality stage's `text:` parameters: datatrove's Gopher, C4 and FineWeb filters,
their thresholds, the presets that choose them, and the rules they build."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:  # text_rules imports datatrove (~0.2 s); the driver needs only the Params
    from ...filters.quality.text_rules import TextRule


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
        from ...filters.quality.text_rules import (
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
