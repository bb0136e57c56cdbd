"""datatrove's Gopher quality filter with its per-word tests done once per distinct word.

`GopherQualityFilter.filter` (datatrove/pipeline/filters/gopher_quality_filter.py)
tests every word of a document character by character twice (has it a character
that is not punctuation; has it a letter), most of the filter's time. A text repeats
its words, so `CountedGopherQuality` tests each distinct word once and weighs it by
its count (`word_counts`; `symbol_free`, cached, shared with the quality stage's word
metrics). The sums are
the same integers, the mean word length the same float (numpy's mean of integer
lengths sums exactly in float64), so the decisions are datatrove's;
tests/test_quality.py compares them on real and perturbed text.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any

from datatrove.data import Document
from datatrove.pipeline.filters import GopherQualityFilter
from datatrove.utils.text import PUNCTUATION_SET, split_into_words

_NO_PUNCTUATION = {ord(ch): None for ch in PUNCTUATION_SET}


@lru_cache(5)
def word_counts(text: str, language: Any) -> Counter[str]:
    """Each distinct word of datatrove's (cached) split of `text`, with its count."""
    return Counter(split_into_words(text, language))


@lru_cache(5)
def symbol_free(text: str, language: Any) -> tuple[int, int]:
    """Words of `text` (datatrove's split) holding a character that is not punctuation,
    and their total length; cached, as the stage's word metrics and the filter both ask."""
    counts = word_counts(text, language)
    kept = [(word, n) for word, n in counts.items() if word.translate(_NO_PUNCTUATION)]
    return sum(n for _, n in kept), sum(len(word) * n for word, n in kept)


class CountedGopherQuality(GopherQualityFilter):
    """`GopherQualityFilter` with its per-word sums over distinct words: the same values
    (the filter below is datatrove's, statement for statement, but for those sums)."""

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        text = doc.text
        words = split_into_words(text, self.language)
        n_words = len(words)
        counts = word_counts(text, self.language)

        n_non_symbol_words_words, length = symbol_free(text, self.language)

        # words < min_doc_words or words > max_doc_words
        if self.min_doc_words and n_non_symbol_words_words < self.min_doc_words:
            return False, "gopher_short_doc"
        if self.max_doc_words and n_non_symbol_words_words > self.max_doc_words:
            return False, "gopher_long_doc"

        # mean word length is outside the range of 3 to 10 characters (np.mean of no
        # words is nan, which no comparison passes)
        avg_n_words = (length / n_non_symbol_words_words if n_non_symbol_words_words
                       else float("nan"))
        if self.min_avg_word_length and avg_n_words < self.min_avg_word_length:
            return False, "gopher_below_avg_threshold"
        if self.max_avg_word_length and avg_n_words > self.max_avg_word_length:
            return False, "gopher_above_avg_threshold"

        # symbol-to-word ratio greater than 0.1 for either the hash symbol or the ellipsis
        if self.max_symbol_word_ratio and text.count("#") / n_words > self.max_symbol_word_ratio:
            return False, "gopher_too_many_hashes"
        if (self.max_symbol_word_ratio
                and (text.count("...") + text.count("…")) / n_words > self.max_symbol_word_ratio):
            return False, "gopher_too_many_ellipsis"

        # any document with more than 90 % of lines starting with a bullet point,
        # or more than 30 % ending with an ellipsis.
        lines = text.splitlines()
        if (
            self.max_bullet_lines_ratio
            and sum(s.lstrip().startswith("•") or s.lstrip().startswith("-") for s in lines)
            / len(lines) > self.max_bullet_lines_ratio
        ):
            return False, "gopher_too_many_bullets"
        if (
            self.max_ellipsis_lines_ratio
            and sum(s.rstrip().endswith("...") or s.rstrip().endswith("…") for s in lines)
            / len(lines) > self.max_ellipsis_lines_ratio
        ):
            return False, "gopher_too_many_end_ellipsis"

        # that 80 % of words in a document contain at least one alphabetic character
        if (
            self.max_non_alpha_words_ratio
            and sum(n for word, n in counts.items() if any(c.isalpha() for c in word))
            / n_words < self.max_non_alpha_words_ratio
        ):
            return False, "gopher_below_alpha_threshold"

        # stop word filter
        if self.min_stop_words and len(self.stop_words.intersection(counts)) < self.min_stop_words:
            return False, "gopher_enough_stop_words"

        return True
