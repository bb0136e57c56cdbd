"""MinHash signatures: datasketch's math, vectorized with numpy.

The permutations are drawn exactly as datasketch's `MinHash(num_perm, seed,
scheme)` draws them, and the values are computed exactly as its
`update_batch` computes them, so for the same 32-bit shingle hashes the
signatures are equal value for value (tests check this). What is faster:
shingles are hashed once for a whole shard (filters.shingles, no Python loop
per token) instead of SHA-1 per shingle in Python, and the permutations run in
a compiled kernel (kernels.py: one fused multiply-add-min pass) or, without
numba, in cache-sized numpy blocks reduced per document with `np.minimum.reduceat`.
"""

from __future__ import annotations

import numpy as np

from ...filters.minhash import shingle_kernels
from ...filters.minhash.shingles import fmix64_array
from . import kernels as minhash_kernels

MERSENNE_61 = np.uint64((1 << 61) - 1)
MAX_HASH = np.uint32(0xFFFFFFFF)  # an empty signature value, as datasketch's
_BLOCK = 1 << 17  # shingles per block: 512 KB of uint32, stays in L2


def permutations(num_perm: int, seed: int, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) of datasketch's MinHash(num_perm, seed, scheme=scheme)."""
    gen = np.random.RandomState(seed)
    if scheme == "legacy":
        pairs = np.array([(gen.randint(1, int(MERSENNE_61), dtype=np.uint64),
                           gen.randint(0, int(MERSENNE_61), dtype=np.uint64))
                          for _ in range(num_perm)], dtype=np.uint64).T
        return pairs[0], pairs[1]
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


def fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint32(16))
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def signatures(hashes: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray,
               scheme: str, compiled: bool | None = None) -> np.ndarray:
    """One signature row (uint32) per document; documents without shingles get MAX_HASH.

    `compiled`: the fused numba kernel when numba is installed (same values, ~10x
    faster), else the numpy blocks below; None: numba once this process hashes shingles
    with it (`shingle_kernels.in_use`: starting numba costs more than a small input's
    signatures).
    """
    docs = len(offsets) - 1
    sig = np.full((docs, len(a)), MAX_HASH, dtype=np.uint32)
    if hashes.size == 0:
        return sig
    if compiled is None:
        compiled = shingle_kernels.in_use()
    if compiled and minhash_kernels.AVAILABLE:
        return minhash_kernels.signatures(hashes, offsets, a, b, scheme, sig)
    if scheme == "legacy":
        values = hashes.astype(np.uint64)
        permute = _legacy
    else:
        values = fmix32(hashes.astype(np.uint32))
        permute = _affine32
    out_dtype = values.dtype
    pairs = list(zip(a.astype(out_dtype), b.astype(out_dtype), strict=True))
    nonempty = np.flatnonzero(offsets[1:] > offsets[:-1])
    starts = offsets[:-1][nonempty]
    buffer = np.empty(min(_BLOCK, hashes.size), dtype=values.dtype)
    with np.errstate(over="ignore"):
        for lo in range(0, hashes.size, _BLOCK):
            hi = min(lo + _BLOCK, hashes.size)
            # Documents whose shingles fall in [lo, hi): segments for reduceat.
            first = int(np.searchsorted(starts, lo, side="right")) - 1
            last = int(np.searchsorted(starts, hi, side="left"))
            seg = np.maximum(starts[first:last], lo) - lo
            rows = nonempty[first:last]
            block = np.empty((len(a), len(rows)), dtype=out_dtype)
            x, out = values[lo:hi], buffer[:hi - lo]
            # One permutation at a time over a long contiguous run of shingles: numpy's
            # SIMD loops for scalar * vector, ~3x faster than a (shingles, perms) broadcast.
            for k, (a_k, b_k) in enumerate(pairs):
                np.minimum.reduceat(permute(x, a_k, b_k, out), seg, out=block[k])
            sig[rows] = np.minimum(sig[rows], block.T)
    return sig


def _affine32(x: np.ndarray, a: np.uint32, b: np.uint32, out: np.ndarray) -> np.ndarray:
    np.multiply(x, a, out=out)
    out += b
    return out


def _legacy(x: np.ndarray, a: np.uint64, b: np.uint64, out: np.ndarray) -> np.ndarray:
    # datasketch: ((a*x + b) mod 2^64) mod (2^61-1), low 32 bits. Mersenne reduction:
    # y mod p = (y & p) + (y >> 61), minus p once if >= p; r >= p iff (r+1) >> 61,
    # and r - p == r + 1 modulo 2^32.
    np.multiply(x, a, out=out)
    out += b
    high = out >> np.uint64(61)
    out &= MERSENNE_61
    out += high
    np.add(out, np.uint64(1), out=high)
    high >>= np.uint64(61)
    out += high
    out &= np.uint64(0xFFFFFFFF)
    return out


def band_buckets(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(docs, bands) uint64: a hash of each band's `rows` signature values."""
    out = np.empty((sig.shape[0], bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for band in range(bands):
            h = np.full(sig.shape[0], band + 1, dtype=np.uint64)
            for col in range(band * rows, (band + 1) * rows):
                h = fmix64_array(h ^ sig[:, col].astype(np.uint64)) + np.uint64(col)
            out[:, band] = fmix64_array(h)
    return out


def doc_partition(keys: np.ndarray, partitions: int) -> np.ndarray:
    """Which document partition a document key belongs to (stable, well spread)."""
    with np.errstate(over="ignore"):
        return ((fmix64_array(keys.astype(np.uint64)) >> np.uint64(32))
                % np.uint64(partitions)).astype(np.int64)


def datasketch_signatures(shingle_lists: list[list[bytes]], num_perm: int, seed: int,
                          scheme: str) -> np.ndarray:
    """The `backend: datasketch` path: MinHash.update_batch with its SHA-1 hash."""
    from datasketch import MinHash

    sig = np.full((len(shingle_lists), num_perm), MAX_HASH, dtype=np.uint32)
    template = MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
    for i, shingles in enumerate(shingle_lists):
        if shingles:
            m = template.copy()
            m.update_batch(shingles)
            sig[i] = m.hashvalues.astype(np.uint32)
    return sig
