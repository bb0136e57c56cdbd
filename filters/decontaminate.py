"""Find benchmark items inside documents: whitespace-free substrings and word n-grams.

Two methods, as the code-LLM papers used them:

- `substring` (StarCoder): a benchmark prompt or solution occurs verbatim once
  every whitespace character is removed on both sides, so re-indented or
  re-wrapped copies still match. All patterns are searched in one pass with an
  Aho-Corasick automaton (pyahocorasick), not one `in` test per item.
  Specificity is judged by rarity, not length: a part of `min_chars` or more is
  always searched; a shorter one (MBPP's `def tn_ap(a,n,d): ...`) only when it
  is anchored on a definition (`def name(` / `class name`) and does not occur in
  a background sample of real code (`common`, computed by the stage), so
  `def count(lst): return sum(lst)` stays out if real code has it and a bare
  `return x + y` (HumanEval/53's solution, no signature) is never searched.
- `ngram` (GPT-3, Llama 2): lowercased word 13-grams. An item part counts as
  found when at least `min_fraction` of its distinctive n-grams occur in the
  document. N-grams that many different items share (MMLU's boilerplate
  "Which of the following ...") are not distinctive and are dropped. Parts
  shorter than `n` words but at least `min_words` long are one whole-part gram.
  Choice labels are not words here: single letters a-e and digits 1-5 are
  dropped on both sides, so an MMLU item written as a web page writes it
  (`An oocyte is\nA. an unfertilized egg.\nB. ...`, `(a)`, `a)`, `1.`, inline or
  re-wrapped) reads as the question followed by its choices.

N-gram hashes are a polynomial over word ids (the benchmark vocabulary, ids in
order of first appearance), computed with numpy over the whole document; a
window holding a word outside the benchmark vocabulary can match nothing and
is masked out. Everything is deterministic: no Python `hash()`, no set order.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import ahocorasick
import numpy as np

Method = Literal["substring", "ngram"]

# ASCII whitespace only: the same characters are removed from patterns and documents.
_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")
_WORD = re.compile(r"\w+")
# Choice labels (A. / (a) / a) / 1.) and the article "a": dropped from both sides.
LABELS = frozenset("abcde12345")
_SKIP = 1  # the word id of every label: removed from a document's ids before hashing
# A code part shorter than min_chars counts only when it defines something by name.
_SIGNATURE = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+\w+", re.M)
_PRIME = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class ItemPart:
    """One searchable piece of a benchmark item (a prompt, a solution, a question)."""

    benchmark: str
    item_id: str
    part: str
    text: str
    method: Method

    @property
    def label(self) -> str:
        return f"{self.benchmark}:{self.item_id} {self.part}"


@dataclass(frozen=True)
class Match:
    benchmark: str
    label: str


def strip_whitespace(text: str) -> str:
    return _WHITESPACE.sub("", text)


def words(text: str) -> list[str]:
    """Lowercased \\w+ words, choice labels and single-letter articles left out."""
    return [w for w in _WORD.findall(text.lower()) if w not in LABELS]


def short_keys(parts: Sequence[ItemPart], min_chars: int, short_min_chars: int) -> list[str]:
    """Whitespace-free code parts too short to be searched on length alone, but anchored
    on a definition: the candidates whose rarity the background decides (sorted)."""
    keys = set()
    for part in parts:
        if part.method != "substring" or not _SIGNATURE.search(part.text):
            continue
        key = strip_whitespace(part.text)
        if short_min_chars <= len(key) < min_chars:
            keys.add(key)
    return sorted(keys)


class SubstringIndex:
    """All `substring` parts in one Aho-Corasick automaton over whitespace-free text."""

    def __init__(self, parts: Sequence[ItemPart], min_chars: int, short_min_chars: int,
                 common: frozenset[str] = frozenset()) -> None:
        self.automaton = ahocorasick.Automaton()
        owners: dict[str, list[int]] = defaultdict(list)
        short = set(short_keys(parts, min_chars, short_min_chars)) - common
        self.common = len(set(short_keys(parts, min_chars, short_min_chars)) & common)
        for index, part in enumerate(parts):
            key = strip_whitespace(part.text)
            if len(key) >= min_chars or key in short:
                owners[key].append(index)
        for key, indices in owners.items():
            self.automaton.add_word(key, tuple(indices))
        self.patterns = len(owners)
        if self.patterns:
            self.automaton.make_automaton()

    def first(self, stripped: str) -> int | None:
        """Smallest part index found in `stripped` (a whitespace-free document)."""
        if not self.patterns:
            return None
        best: int | None = None
        for _end, indices in self.automaton.iter(stripped):
            if best is None or indices[0] < best:
                best = indices[0]
        return best


class NgramIndex:
    """Word n-grams of the `ngram` parts, as sorted uint64 hashes per gram length."""

    def __init__(self, parts: Sequence[ItemPart], n: int, min_words: int,
                 min_fraction: float, max_items_per_gram: int) -> None:
        self.n, self.min_fraction = n, min_fraction
        self.vocab: dict[str, int] = dict.fromkeys(LABELS, _SKIP)
        grams_of: list[set[tuple[int, int]]] = []  # per part: {(length, hash)}
        items_of_gram: dict[tuple[int, int], set[tuple[str, str]]] = defaultdict(set)
        for part in parts:
            ids = np.array([self.vocab.setdefault(w, len(self.vocab) + 2)
                            for w in words(part.text)], dtype=np.uint64)
            grams = set()
            if len(ids) >= n:
                grams = {(n, int(h)) for h in _rolling(ids, n)}
            elif len(ids) >= min_words:
                grams = {(len(ids), int(_rolling(ids, len(ids))[0]))}
            grams_of.append(grams)
            for gram in grams:
                items_of_gram[gram].add((part.benchmark, part.item_id))
        common = {g for g, items in items_of_gram.items() if len(items) > max_items_per_gram}
        self.parts_of: dict[tuple[int, int], list[int]] = defaultdict(list)
        self.size: list[int] = []
        for index, grams in enumerate(grams_of):
            kept = sorted(grams - common)
            self.size.append(len(kept))
            for gram in kept:
                self.parts_of[gram].append(index)
        by_length: dict[int, list[int]] = defaultdict(list)
        for length, value in self.parts_of:
            by_length[length].append(value)
        self.tables = {length: np.unique(np.array(values, dtype=np.uint64))
                       for length, values in sorted(by_length.items())}
        self.dropped_common = len(common)
        self.shortest = min(self.tables, default=0)
        self.longest = max(self.tables, default=0)

    def best(self, text: str) -> int | None:
        """The part with the largest share of its n-grams in `text`, if over the bar."""
        if not self.tables:
            return None
        # Raw words, then the labels' ids dropped in numpy: cheaper than filtering in Python.
        ids = np.array([self.vocab.get(w, 0) for w in _WORD.findall(text.lower())],
                       dtype=np.uint64)
        ids = ids[ids != _SKIP]
        found: dict[int, int] = defaultdict(int)
        if len(ids) < self.shortest:
            return None
        zeros = np.concatenate([[0], np.cumsum(ids == 0)])
        # Windows of every length grow one word at a time: one multiply-add per length.
        hashes = ids.copy()
        for length in range(1, self.longest + 1):
            windows = len(ids) - length + 1
            if windows <= 0:
                break
            if length > 1:
                hashes = hashes[:windows] * _PRIME + ids[length - 1:]
            table = self.tables.get(length)
            if table is None:
                continue
            candidates = np.unique(hashes[zeros[length:] == zeros[:-length]])
            if not len(candidates):
                continue
            slot = np.minimum(np.searchsorted(table, candidates), len(table) - 1)
            for value in candidates[table[slot] == candidates].tolist():
                for index in self.parts_of[(length, value)]:
                    found[index] += 1
        best, best_share = None, 0.0
        for index in sorted(found):
            share = found[index] / self.size[index]
            if share >= self.min_fraction and share > best_share:
                best, best_share = index, share
        return best


def _rolling(ids: np.ndarray, length: int) -> np.ndarray:
    """Polynomial hash of every window of `length` ids (uint64, wrapping)."""
    windows = len(ids) - length + 1
    hashes = np.zeros(windows, dtype=np.uint64)
    for k in range(length):
        hashes = hashes * _PRIME + ids[k:k + windows]
    return hashes


class BenchmarkMatcher:
    """Both indexes over one list of parts; `find` names the first item found."""

    def __init__(self, parts: Sequence[ItemPart], *, n: int = 13, min_words: int = 8,
                 min_fraction: float = 0.5, max_items_per_gram: int = 10,
                 min_chars: int = 50, short_min_chars: int = 20,
                 common: frozenset[str] = frozenset()) -> None:
        self.parts = list(parts)
        self.substring = SubstringIndex(
            [p if p.method == "substring" else _disabled(p) for p in self.parts], min_chars,
            short_min_chars, common)
        self.ngram = NgramIndex(
            [p if p.method == "ngram" else _disabled(p) for p in self.parts],
            n, min_words, min_fraction, max_items_per_gram)

    def find(self, text: str) -> Match | None:
        index = self.substring.first(strip_whitespace(text))
        if index is None:
            index = self.ngram.best(text)
        if index is None:
            return None
        part = self.parts[index]
        return Match(part.benchmark, part.label)


def _disabled(part: ItemPart) -> ItemPart:
    # Keeps part indices aligned across both indexes; an empty text yields no pattern.
    return ItemPart(part.benchmark, part.item_id, part.part, "", part.method)
