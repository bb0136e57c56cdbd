"""Text quality rules: datatrove's Gopher, C4 and FineWeb filters, with a fast word splitter.

The rules themselves are datatrove's (`GopherQualityFilter`,
`GopherRepetitionFilter`, `C4QualityFilter`, `FineWebQualityFilter`): we build
them with the manifest's thresholds and call their `filter(doc)` (the Gopher
filters' statistics are computed with the same values in fewer steps:
gopher_repetition.py, gopher_quality.py). The one thing we replace in their rules
is the word/sentence splitter they are handed: datatrove's English splitter is spaCy's
(`spacy.blank("en")`, about 0.65 MB/s per core and a 40 MB dependency).
`RegexWordTokenizer` reproduces spaCy's English rules that the filters' statistics
depend on (punctuation split off word ends, contractions, hyphen infixes,
abbreviations, `...`, sentence ends) in a single compiled regex; tests measure how
often its decisions agree with spaCy's on real prose.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from typing import Any

from datatrove.data import Document
from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter
from datatrove.utils.word_tokenizers import WordTokenizer

from .gopher_quality import CountedGopherQuality, symbol_free
from .gopher_repetition import NumpyGopherRepetition

# One pass of alternatives, first match wins; mirrors spaCy's English tokenizer closely
# enough for word counts, word lengths and symbol ratios (see tests/test_quality.py).
# Alternatives inside a repeated group must exclude each other: when both of two could
# take the same "-", a run like "x-----" (ASCII art) backtracked 2^n ways (seconds at 20
# dashes, never ending at 70).
_WORDS = re.compile(
    r"""
      https?://[^\s"'<>()\[\]]+[^\s"'<>()\[\].,;:!?]          # URLs stay whole
    | -{2,}(?![^\W_])                                          # "----" stays whole
    | [^\W_]+(?=n['’]t\b)                                      # do|n't
    | n['’]t\b
    | (?<=\w)['’](?:s|re|ve|ll|d|m)\b                          # it|'s
    | \b(?:[A-Za-z]\.){2,}                                     # e.g. U.S.
    | \b[A-Z]\.(?=\s)                                          # A. (initials)
    | \b(?:Mr|Mrs|Ms|Dr|Prof|St|vs|Inc|Ltd|Jr|Sr)\.            # common abbreviations
    | (?:(?<![\w-])-+)?[^\W_]+                                  # words, --help, -m, 3.14,
      (?:(?:[.@+_]                                             # UTF-8, a+b; well|-|known:
          |(?<![^\W\d_])[-/]                                   # - or / not after a letter,
          |(?<=[^\W\d_])[-/](?![^\W\d_])                      # or after one, not before one
      )+[^\W_]+)*
    | \.{2,} | …
    | [^\w\s] | _
    """,
    re.VERBOSE,
)
# spaCy's sentencizer: a sentence ends after a run of terminal punctuation (and
# closing quotes/brackets) that is followed by whitespace.
_SENTENCE_END = re.compile(r"""(?:[.!?。！？‼⁇⁈⁉]+|…)['"”’)\]]*(?=\s)""")


class _Chunks(dict[str, list[str]]):
    """The words of each whitespace-separated chunk met so far, as `_WORDS` splits the
    chunk followed by whitespace.

    No word holds whitespace and no alternative of `_WORDS` looks further than one
    character past a chunk or before it (`\\b`, `(?=\\s)`, `(?<=\\w)`, ...), where
    whitespace or the text's edge reads the same, so a text's words are its chunks'
    words in order (`str.split` and `\\s` are the same Unicode whitespace). Prose
    repeats its chunks ("the", "of", "words,"): the regex then runs on ~1 in 6, and
    a chunk of letters only is one word without it."""

    MAX = 1 << 16  # chunks kept, then the memo starts over: 15-20 MB (prose, code)

    def __missing__(self, chunk: str) -> list[str]:
        if len(self) >= self.MAX:
            self.clear()
        words = self[chunk] = [chunk] if chunk.isalpha() else _WORDS.findall(chunk + " ")
        return words


_CHUNKS = _Chunks()


def split_words(text: str) -> list[str]:
    """`_WORDS.findall(text)`, from the words of the text's chunks (`_Chunks`): about
    half the time on prose (0.34 -> 0.18 s on the 50 MB benchmark's 3 MB of text)."""
    chunks = text.split()
    if not chunks:
        return []
    if text[-1].isspace():
        return list(chain.from_iterable(map(_CHUNKS.__getitem__, chunks)))
    # the last chunk ends the text: `(?=\s)` (initials "A.") does not hold after it
    words = list(chain.from_iterable(map(_CHUNKS.__getitem__, chunks[:-1])))
    return words + _WORDS.findall(chunks[-1])


class RegexWordTokenizer(WordTokenizer):
    """A datatrove WordTokenizer in one regex: spaCy's English results, ~40x faster."""

    def __init__(self, language: str = "en") -> None:
        super().__init__(language)

    def word_tokenize(self, text: str) -> list[str]:
        return split_words(text)

    def sent_tokenize(self, text: str) -> list[str]:
        return [text[a:b].strip() for a, b in self.span_tokenize(text) if text[a:b].strip()]

    def span_tokenize(self, text: str) -> list[tuple[int, int]]:
        spans, start = [], 0
        for match in _SENTENCE_END.finditer(text):
            if text[start:match.end()].strip():
                spans.append((start, match.end()))
                start = match.end()
        if text[start:].strip() or not spans:
            spans.append((start, len(text)))
        return spans

    def __reduce__(self) -> tuple[Any, ...]:  # picklable for Ray workers
        return (RegexWordTokenizer, (self.language,))


_FILTERS = {
    "gopher_repetition": NumpyGopherRepetition,  # datatrove's, its n-gram counts in numpy
    "gopher_quality": CountedGopherQuality,  # datatrove's, per distinct word
    "c4": C4QualityFilter,
    "fineweb": FineWebQualityFilter,
}
TEXT_FILTER_NAMES = tuple(_FILTERS)


@dataclass
class TextRule:
    """One datatrove filter with its thresholds; `check` says why a text fails, or None."""

    name: str
    filter: Any
    edit_text: bool = False

    def check(self, text: str) -> tuple[str | None, str]:
        """(reason or None, the text after the rule: C4 may drop lines when `edit_text`)."""
        doc = Document(text=text, id="")
        try:
            verdict = self.filter.filter(doc)
        except ZeroDivisionError:  # datatrove divides by word/line counts without guarding
            return f"{self.name}/empty", text
        if verdict is True or (isinstance(verdict, tuple) and verdict[0]):
            return None, doc.text if self.edit_text else text
        detail = verdict[1] if isinstance(verdict, tuple) and len(verdict) > 1 else "failed"
        return f"{self.name}/{detail}", text


def build_rule(name: str, thresholds: dict[str, Any], tokenizer: WordTokenizer | str,
               edit_text: bool = False) -> TextRule:
    """A datatrove filter by our name (`gopher_quality`, ...) with these constructor values.

    `tokenizer` is what datatrove calls `language`: a WordTokenizer, or a language
    code to use datatrove's own (spaCy) splitter.
    """
    values = dict(thresholds)
    for key in ("top_n_grams", "dup_n_grams"):  # datatrove expects tuples of (n, fraction)
        if values.get(key) is not None:
            values[key] = tuple(tuple(pair) for pair in values[key])
    if values.get("stop_chars") is not None:
        values["stop_chars"] = tuple(values["stop_chars"])
    return TextRule(name, _FILTERS[name](language=tokenizer, **values), edit_text)


def check_text(text: str, rules: Iterable[TextRule]) -> tuple[str | None, str]:
    """The first failing rule's reason (None = keep) and the possibly edited text."""
    for rule in rules:
        reason, text = rule.check(text)
        if reason is not None:
            return reason, text
    return None, text


def word_metrics(text: str, tokenizer: WordTokenizer | str) -> tuple[int, float]:
    """Words with a non-punctuation character, and their mean length (Gopher's measures).

    Goes through datatrove's cached splitter and the cached `symbol_free`, so the filters
    that run next reuse them.
    """
    words, length = symbol_free(text, tokenizer)
    return words, (length / words if words else 0.0)
