"""datatrove's Gopher repetition filter with its n-gram statistics computed in numpy.

`GopherRepetitionFilter.filter` (datatrove/pipeline/filters/gopher_repetition_filter.py)
joins every n-gram of a document's words into a string, 9 times over (n = 2-4 joined
with spaces for the top n-gram, n = 5-10 joined without for the duplicated n-grams):
most of the filter's time. `NumpyGopherRepetition` gives the same numbers (and so the
same decisions) from integer keys:

- top n-gram (`find_top_duplicate(get_n_grams(words, n))`): the n-grams as tuples of
  word ids. When no word holds a space, " ".join is one-to-one on tuples, so equal
  tuples are equal strings. The top one is Counter.most_common(1)'s: the most
  frequent, the first seen among ties; its length is its words' plus n - 1 spaces.
- duplicated n-grams (`find_all_duplicate(words, n)`): "".join is not one-to-one
  (["ab", "c"] and ["a", "bc"] give one string), so the n-grams are keyed by a
  polynomial hash of their characters. Different hashes are different strings, so
  a position whose hash was not seen before is new; only positions whose hash was
  seen are walked in datatrove's order (skip n after a repeat), and each is compared
  as a string with the earlier positions of its hash that the walk visited.

The paragraph and line checks are datatrove's own functions. tests/test_quality.py
checks every statistic against datatrove's functions on real and repetitive text.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
from datatrove.data import Document
from datatrove.pipeline.filters.gopher_repetition_filter import (
    GopherRepetitionFilter,
    find_duplicates,
    find_top_duplicate,
    get_n_grams,
)
from datatrove.utils.text import split_into_words

_BASE = 0x9E3779B97F4A7C15  # odd: invertible modulo 2**64
_BASE_INVERSE = pow(_BASE, -1, 2**64)
_LENGTH = np.uint64(0xC2B2AE3D27D4EB4F)
_MIX = 0xFF51AFD7ED558CCD  # odd
_MIX_INVERSE = pow(_MIX, -1, 2**64)


class WordGrams:
    """The n-gram statistics of one document's words."""

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self._joined = "".join(words)
        self._spaced = " " in self._joined  # " ".join is not one-to-one on tuples then
        self.lengths = np.fromiter(map(len, words), np.int64, len(words))
        self.offsets = np.zeros(len(words) + 1, np.int64)
        np.cumsum(self.lengths, out=self.offsets[1:])
        # per character position: sum(c[k] * B**k) for k < i, and B**-i (mod 2**64)
        codes = np.frombuffer(self._joined.encode("utf-32-le", "surrogatepass"),
                              np.uint32).astype(np.uint64)
        with np.errstate(over="ignore"):
            powers = np.cumprod(_powers(_BASE, codes.size + 1), dtype=np.uint64)
            self._inverse = np.cumprod(_powers(_BASE_INVERSE, codes.size + 1), dtype=np.uint64)
            self._sums = np.zeros(codes.size + 1, np.uint64)
            np.cumsum(codes * powers[:-1], out=self._sums[1:])
        self._word_sums: np.ndarray | None = None

    def _span_hashes(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """A hash of the characters [start, end) of the joined words, and of the length:
        equal strings hash equal (unequal ones almost never do)."""
        with np.errstate(over="ignore"):
            return ((self._sums[end] - self._sums[start]) * self._inverse[start]
                    + (end - start).astype(np.uint64) * _LENGTH)

    def top_duplicate(self, n: int) -> int | None:
        """`find_top_duplicate(get_n_grams(words, n))`, None without n-grams."""
        count = len(self.words) - n + 1
        if count <= 0:
            return None
        if self._spaced:
            return find_top_duplicate(get_n_grams(self.words, n))
        if self._word_sums is None:  # a hash per word, summed as words x M**k
            words = self._span_hashes(self.offsets[:-1], self.offsets[1:])
            with np.errstate(over="ignore"):
                self._word_sums = np.zeros(len(self.words) + 1, np.uint64)
                np.cumsum(words * np.cumprod(_powers(_MIX, len(self.words)), dtype=np.uint64),
                          out=self._word_sums[1:])
                self._word_inverse = np.cumprod(_powers(_MIX_INVERSE, len(self.words) + 1),
                                                dtype=np.uint64)
        with np.errstate(over="ignore"):
            keys = ((self._word_sums[n:n + count] - self._word_sums[:count])
                    * self._word_inverse[:count])
        groups = _Groups(keys)
        # Counter.most_common(1): the most frequent n-gram, the first seen among ties.
        # Hashes may merge different n-grams (never split equal ones): a group of the
        # top count whose members are all one n-gram is the answer.
        most = int(groups.sizes.max())
        for group in np.flatnonzero(groups.sizes == most)[np.argsort(
                groups.first[groups.sizes == most], kind="stable")].tolist():
            members = groups.members(group)
            at = members[0]
            gram = self.words[at:at + n]
            if all(self.words[j:j + n] == gram for j in members[1:]):
                return (int(self.lengths[at:at + n].sum()) + n - 1) * most
        return find_top_duplicate(get_n_grams(self.words, n))  # hash collisions

    def all_duplicate(self, n: int) -> int:
        """`find_all_duplicate(words, n)`: characters of the n-grams (joined without
        spaces) that repeat an n-gram seen before, skipping n words after each."""
        count = len(self.words) - n + 1
        if count <= 0:
            return 0
        start, end = self.offsets[:count], self.offsets[n:n + count]
        groups = _Groups(self._span_hashes(start, end))
        if groups.repeats.size == 0:  # every n-gram differs from every other
            return 0
        joined, inverse = self._joined, groups.inverse
        repeated, at, hits = 0, 0, []  # `hits`: positions that repeated (increasing)
        for r in groups.repeats.tolist():
            if r < at:
                continue  # skipped: within n words after a repeat
            a, b = int(start[r]), int(end[r])
            text = joined[a:b]
            for j in groups.members(int(inverse[r])):
                if j >= r:
                    break
                h = bisect_right(hits, j) - 1
                visited = h < 0 or j == hits[h] or j >= hits[h] + n
                if visited and joined[int(start[j]):int(end[j])] == text:
                    repeated += b - a
                    at = r + n
                    hits.append(r)
                    break
        return repeated


class _Groups:
    """Positions grouped by equal key, from one sort."""

    def __init__(self, keys: np.ndarray) -> None:
        self.order = np.argsort(keys)
        ordered = keys[self.order]
        new = np.ones(keys.size, bool)
        new[1:] = ordered[1:] != ordered[:-1]
        self.starts = np.append(np.flatnonzero(new), keys.size)
        self.sizes = np.diff(self.starts)
        self.first = (np.minimum.reduceat(self.order, self.starts[:-1]) if keys.size
                      else self.order)  # each group's first position
        first = np.zeros(keys.size, bool)
        first[self.first] = True
        self.repeats = np.flatnonzero(~first)  # positions whose key came before
        self._new = new
        self._members: dict[int, list[int]] = {}

    @property
    def inverse(self) -> np.ndarray:
        """The group of each position."""
        inverse = np.empty(self.order.size, np.int64)
        inverse[self.order] = np.cumsum(self._new) - 1
        return inverse

    def members(self, group: int) -> list[int]:
        """The group's positions, increasing."""
        if group not in self._members:
            self._members[group] = sorted(
                self.order[self.starts[group]:self.starts[group + 1]].tolist())
        return self._members[group]


def _powers(base: int, size: int) -> np.ndarray:
    """[1, base, base, ...]: cumprod gives base**i."""
    out = np.full(size, base, np.uint64)
    if size:
        out[0] = 1
    return out


class NumpyGopherRepetition(GopherRepetitionFilter):
    """`GopherRepetitionFilter` with the n-gram statistics of `WordGrams`: the same
    values, so the same decisions (the filter below is datatrove's, statement for
    statement, but for those two calls)."""

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        text = doc.text
        if not text:
            return False, "empty"

        paragraphs = self.paragraph_exp.split(text.strip())
        paragraphs_duplicates, char_duplicates = find_duplicates(paragraphs)
        if self.dup_para_frac and paragraphs_duplicates / len(paragraphs) > self.dup_para_frac:
            return False, "dup_para_frac"
        if self.dup_para_char_frac and char_duplicates / len(text) > self.dup_para_char_frac:
            return False, "dup_para_char_frac"

        lines = self._line_splitter.split(text)
        line_duplicates, char_duplicates = find_duplicates(lines)
        if self.dup_line_frac and line_duplicates / len(lines) > self.dup_line_frac:
            return False, "dup_line_frac"
        if self.dup_line_char_frac and char_duplicates / len(text) > self.dup_line_char_frac:
            return False, "dup_line_char_frac"

        grams = WordGrams(split_into_words(text, self.language))
        for n, n_frac in self.top_n_grams:
            top_char_length = grams.top_duplicate(n)
            if top_char_length is None:
                continue
            if top_char_length / len(text) > n_frac:
                return False, f"top_{n}_gram"

        for n, n_frac in self.dup_n_grams:
            n_duplicates_char = grams.all_duplicate(n)
            if n_duplicates_char / len(text) > n_frac:
                return False, f"duplicated_{n}_n_grams"

        return True

