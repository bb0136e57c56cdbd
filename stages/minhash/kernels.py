"""Compiled MinHash kernels (numba): the permutation step fused into one pass.

The numpy path (hashing.py) makes three passes over every (shingle,
permutation) value: multiply, add, then a per-document min. Here each shingle
is loaded once and the inner loop runs across the permutations of one
signature row, which stays in L1: multiply, add and min in SIMD registers
(uint32 arithmetic wraps mod 2^32 as datasketch's affine32 does). Same values
as the numpy path, value for value; numba is optional (`AVAILABLE`).
"""

from __future__ import annotations

import importlib.util
from functools import cache

import numpy as np

from ...filters.minhash.shingle_kernels import numba_njit

# Checked without importing: numba takes ~0.3 s to import, paid only when a kernel runs.
AVAILABLE = importlib.util.find_spec("numba") is not None


def _fmix32(h: np.uint32) -> np.uint32:
    h ^= h >> np.uint32(16)
    h = np.uint32(h * np.uint32(0x85EBCA6B))
    h ^= h >> np.uint32(13)
    h = np.uint32(h * np.uint32(0xC2B2AE35))
    return np.uint32(h ^ (h >> np.uint32(16)))


def _affine32(values: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray,
              sig: np.ndarray) -> None:
    """sig[d, k] = min over document d's shingles x of a[k] * fmix32(x) + b[k] mod 2^32."""
    perms = a.shape[0]
    for d in range(offsets.shape[0] - 1):
        row = sig[d]
        i, end = int(offsets[d]), int(offsets[d + 1])
        # Four shingles per pass over the row: a, b and the row are loaded once for
        # four multiply-add-min, so the loop is bound by arithmetic, not loads.
        while i + 4 <= end:
            h0, h1 = _fmix32(values[i]), _fmix32(values[i + 1])
            h2, h3 = _fmix32(values[i + 2]), _fmix32(values[i + 3])
            for k in range(perms):
                a_k, b_k = a[k], b[k]
                v = min(min(np.uint32(a_k * h0 + b_k), np.uint32(a_k * h1 + b_k)),
                        min(np.uint32(a_k * h2 + b_k), np.uint32(a_k * h3 + b_k)))
                row[k] = min(row[k], v)
            i += 4
        while i < end:
            h = _fmix32(values[i])
            for k in range(perms):
                row[k] = min(row[k], np.uint32(a[k] * h + b[k]))
            i += 1


def _legacy(values: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray,
            sig: np.ndarray) -> None:
    """sig[d, k] = min over x of ((a[k] * x + b[k]) mod 2^64 mod (2^61 - 1)) mod 2^32."""
    perms = a.shape[0]
    prime = np.uint64((1 << 61) - 1)
    for d in range(offsets.shape[0] - 1):
        row = sig[d]
        for i in range(offsets[d], offsets[d + 1]):
            x = np.uint64(values[i])
            for k in range(perms):
                y = np.uint64(a[k] * x + b[k])
                r = (y & prime) + (y >> np.uint64(61))
                r += (r + np.uint64(1)) >> np.uint64(61)  # r - p == r + 1 mod 2^32
                v = np.uint32(r & np.uint64(0xFFFFFFFF))
                row[k] = min(row[k], v)


@cache
def _compiled() -> dict:
    njit = numba_njit()

    global _fmix32  # _affine32 calls it by its global name: the compiled one, inlined
    _fmix32 = njit(inline="always")(_fmix32)
    # cache=True: compiled once per checkout (in __pycache__), not once per Ray worker.
    jit = njit(cache=True, nogil=True, boundscheck=False)
    return {"affine32": jit(_affine32), "legacy": jit(_legacy)}


def signatures(hashes: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray,
               scheme: str, sig: np.ndarray) -> np.ndarray:
    """Fill `sig` (docs x perms uint32, preset to MAX_HASH) with the documents' minima."""
    wide = np.uint64 if scheme == "legacy" else np.uint32
    _compiled()[scheme](np.ascontiguousarray(hashes, dtype=np.uint32), offsets.astype(np.int64),
                        a.astype(wide), b.astype(wide), sig)
    return sig
