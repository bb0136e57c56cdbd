"""Compiled shingle hashing (numba): the same hashes as filters.shingles, in one pass.

numpy needs a dozen passes over the bytes and tokens (class lookup, edge
detection, gathers of 8-byte words, one fmix64 round per pass, n shifted
products); here each document is scanned once: a token's 8-byte words are
mixed as its end is found, and its shingles are mixed from the document's token
hashes right after. Optional: `AVAILABLE` is False without numba.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

# Checked without importing: numba takes ~0.3 s to import, paid only when a kernel runs.
AVAILABLE = importlib.util.find_spec("numba") is not None

# Starting numba costs a process ~0.35-0.45 s of CPU (its import, its numpy support, the
# cached kernels); the kernels then save ~7 ms per MB of text over the numpy path
# (shingle hashes + signatures, 2026-12-02: 4.9-9.8 vs 11-18 ms/MB on code and prose).
# So a process hashes with numpy until it has hashed COMPILE_AFTER bytes, then with
# numba: a small build's two workers never start numba, a large one's each lose ~0.2 s.
# The values are the same either way (tests check both paths).
COMPILE_AFTER = 32 << 20
_hashed = 0


def worth_compiling(nbytes: int) -> bool:
    """Whether this process hashes these `nbytes` of text with the compiled kernels:
    once it has hashed more than COMPILE_AFTER bytes in all (counted here)."""
    global _hashed
    _hashed += nbytes
    return in_use()


def in_use() -> bool:
    """Whether this process has switched to the compiled kernels (`worth_compiling`)."""
    return AVAILABLE and _hashed > COMPILE_AFTER


def _fmix64(h: np.uint64) -> np.uint64:
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


def _word(data: np.ndarray, at: int) -> np.uint64:
    """The little-endian uint64 at data[at:at + 8] (LLVM merges the byte loads into one)."""
    word = np.uint64(0)
    for j in range(8):
        word |= np.uint64(data[at + j]) << np.uint64(8 * j)
    return word


def _hash(data: np.ndarray, offsets: np.ndarray, inside: np.ndarray, masks: np.ndarray,
          multipliers: np.ndarray, length_key: np.uint64, n: int, out_offsets: np.ndarray,
          tokens: np.ndarray, out: np.ndarray) -> None:
    """`data` is padded with 8 bytes (whole words can be read at any token's end);
    `tokens` and `out` are sized for the most tokens a document's bytes can hold."""
    pos = 0
    for d in range(offsets.shape[0] - 1):
        end = offsets[d + 1]
        count = 0
        i = offsets[d]
        while i < end:
            if not inside[data[i]]:
                i += 1
                continue
            stop = i + 1
            while stop < end and inside[data[stop]]:
                stop += 1
            # The length enters the first word's mix: h starts as length * key.
            h = np.uint64(np.uint64(stop - i) * length_key)
            while i < stop:
                h = _fmix64(h ^ (_word(data, i) & masks[min(8, stop - i)]))
                i += 8
            tokens[count] = h
            count += 1
            i = stop
        width = min(n, count)
        for s in range(max(count - n + 1, 1) if count else 0):
            total = np.uint64(0)
            for c in range(width):
                total += multipliers[c] * tokens[s + c]
            out[pos] = np.uint32(_fmix64(total) >> np.uint64(32))
            pos += 1
        out_offsets[d + 1] = pos


class _Hidden:
    """A meta path finder for which one module does not exist."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == self.name:
            raise ModuleNotFoundError(f"{name} hidden while numba loads", name=name)


@cache
def numba_njit() -> Callable:
    """numba's `njit`, numba's numpy support imported without `scipy.linalg`.

    The first compiled call (or load from numba's cache) of a process imports numba's
    numpy implementations; `numba.np.arraymath` imports `scipy.linalg` then, only to
    learn whether jitted `np.dot` and friends may call SciPy's BLAS (`_check_blas`).
    That import is ~0.15 s of CPU in every Ray worker (measured: 0.50 -> 0.38 s for the
    first signature task's numba start). These kernels call no BLAS, so `scipy.linalg`
    is hidden while that module imports and numba takes its supported no-SciPy path
    (linear algebra unavailable in jitted code of this process; none here uses it).
    `scipy.linalg` itself imports normally afterwards.
    """
    if "numba.np.arraymath" not in sys.modules and "scipy.linalg" not in sys.modules:
        hidden = _Hidden("scipy.linalg")
        sys.meta_path.insert(0, hidden)
        try:
            import numba.np.arraymath  # noqa: F401 - imported for its side effect
        finally:
            sys.meta_path.remove(hidden)
    from numba import njit

    return njit


@cache
def _compiled() -> Callable:
    njit = numba_njit()

    global _fmix64, _word  # _hash calls them by their global names: compiled, inlined
    _fmix64 = njit(inline="always")(_fmix64)
    _word = njit(inline="always")(_word)
    # cache=True: compiled once per checkout (in __pycache__), not once per Ray worker.
    return njit(cache=True, nogil=True, boundscheck=False)(_hash)


def shingle_hashes(data: np.ndarray, offsets: np.ndarray, inside: np.ndarray,
                   lower: bytes | None, multipliers: np.ndarray, length_key: int,
                   n: int) -> tuple[np.ndarray, np.ndarray]:
    """(hashes uint32, offsets int64) of every document of the (bytes, offsets) column.

    `lower`: a bytes.translate table applied first (words mode), or None.
    """
    hash_ = _compiled()
    begin, finish = int(offsets[0]), int(offsets[-1])
    # A padded copy of the column's bytes: whole 8-byte words can be read anywhere.
    padded = np.zeros(finish - begin + 8, dtype=np.uint8)
    raw = data[begin:finish]
    padded[:finish - begin] = (raw if lower is None
                               else np.frombuffer(raw.tobytes().translate(lower), np.uint8))
    offsets = offsets.astype(np.int64) - begin
    inside = inside.astype(np.uint8)
    docs = offsets.shape[0] - 1
    # A document of L bytes has at most (L + 1) // 2 tokens (one byte each, separated):
    # bounds for one pass. np.empty only reserves: untouched pages cost no memory.
    lengths = np.diff(offsets)
    most = int(lengths.max()) if docs else 0
    out = np.empty(int(((lengths + 1) // 2).sum()), dtype=np.uint32)
    out_offsets = np.zeros(docs + 1, dtype=np.int64)
    hash_(padded, offsets, inside, _BYTE_MASKS, multipliers[:n], np.uint64(length_key), n,
          out_offsets, np.empty((most + 1) // 2 + 1, dtype=np.uint64), out)
    return out[:out_offsets[-1]].copy(), out_offsets


_BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
