"""MinHash near-dedup parameters, and the LSH bands x rows they imply.

`optimal_bands_rows` is datasketch's `_optimal_param` (same grid, same
midpoint sums, same tie-breaking), vectorized: it picks the bands b and rows r
(b*r <= permutations) minimizing the weighted false positive + false negative
probability mass of the LSH S-curve 1 - (1 - s^r)^b around the threshold.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

import numpy as np
from pydantic import Field, PositiveInt, model_validator

from ..base import StageParams
from ..keeper import KeepOrder
from ..paths import LocalPath


class MinHashParams(StageParams):
    ngram: int = Field(5, ge=1, le=64)
    """Tokens per shingle."""
    permutations: int = Field(256, ge=2, le=4096)
    """MinHash permutations (signature length)."""
    threshold: float = Field(0.7, gt=0.0, lt=1.0)
    """Jaccard similarity above which two documents are near duplicates."""
    bands: PositiveInt | None = None
    """LSH bands; with `rows`, overrides the choice derived from `threshold`."""
    rows: PositiveInt | None = None
    """LSH rows per band (bands * rows <= permutations)."""
    false_positive_weight: float | None = Field(None, ge=0.0)
    """Weight of false positives when deriving bands x rows. Default: 0.1 with `verify`
    (verification drops false positives, so LSH may favor recall), else 0.5 (datasketch's)."""
    false_negative_weight: float | None = Field(None, ge=0.0)
    """Weight of false negatives when deriving bands x rows. Default: 0.9 with `verify`,
    else 0.5."""
    verify: bool = True
    """Check candidate pairs by their true Jaccard on the shingle sets."""
    seed: int | None = Field(None, ge=0, lt=2**32)
    """Seed of the permutations (default: the manifest's seed)."""
    scheme: Literal["affine32", "legacy"] = "affine32"
    """datasketch's permutation scheme: affine32 (its default since 2.0: fmix32, then
    a*x+b mod 2^32) or legacy ((a*x+b) mod (2^61-1), low 32 bits)."""
    backend: Literal["numpy", "datasketch"] = "numpy"
    """Who computes signatures: ours (numba kernels, plain numpy without numba), or
    datasketch's MinHash.update_batch (same math, its SHA-1 shingle hash; ~19x slower)."""
    tokenizer: Literal["auto", "code", "words", "whitespace"] = "auto"
    """auto: `code` for code documents, `words` for text documents."""
    partitions: PositiveInt = 8
    """Band partitions and document partitions; memory per task ~ 1/partitions of the
    corpus' band rows (buckets) or shingle sets (verify). A run uses at most one per
    input shard (`MinHash.partitioned`)."""
    keep_order: KeepOrder = "stars"
    """Which member of a cluster survives: `stars` (most stars, then a known licence,
    then smallest id) or `stack-v2` (permissive > no licence > non-permissive, then
    stars, then id); stages/keeper.py."""
    bucket_window: PositiveInt = 8
    """In a bucket sorted by document, each member pairs with the next `bucket_window`
    members: all pairs for buckets up to bucket_window+1 members, a connected band of
    pairs (linear, not quadratic) for larger ones."""
    against: list[LocalPath] = []
    """Earlier finished run folders (local or fsspec): documents near-duplicating one of
    their kept documents are removed as `near_duplicate_of_earlier`, before this run's
    own clustering. Each needs a dedup index with the same seed, permutations, bands,
    rows, ngram, tokenizer, scheme and backend."""
    index: bool = False
    """Write this run's dedup index (`<run>/index/`) when the run ends, so later runs can
    deduplicate against it."""

    @model_validator(mode="after")
    def _bands_rows(self) -> MinHashParams:
        if (self.bands is None) != (self.rows is None):
            raise ValueError("give both bands and rows, or neither (derived from threshold)")
        if self.bands is not None and self.rows is not None \
                and self.bands * self.rows > self.permutations:
            raise ValueError(f"bands * rows = {self.bands * self.rows} exceeds "
                             f"permutations = {self.permutations}")
        return self

    def lsh_shape(self) -> tuple[int, int]:
        if self.bands is not None and self.rows is not None:
            return self.bands, self.rows
        return optimal_bands_rows(self.threshold, self.permutations, *self.weights())

    def weights(self) -> tuple[float, float]:
        """(false positive, false negative) weights of the bands x rows choice."""
        fp_default, fn_default = (0.1, 0.9) if self.verify else (0.5, 0.5)
        fp = self.false_positive_weight
        fn = self.false_negative_weight
        return (fp if fp is not None else fp_default, fn if fn is not None else fn_default)

    def effective_seed(self, manifest_seed: int) -> int:
        return self.seed if self.seed is not None else manifest_seed % 2**32


def _midpoint_grid(lo: float, hi: float) -> np.ndarray:
    # datasketch's integrate(): x accumulates by 0.001 in floating point.
    points, x, step = [], lo, 0.001
    while x < hi:
        points.append(x + 0.5 * step)
        x += step
    return np.array(points)


def _integral(values: np.ndarray) -> np.ndarray:
    # Left-to-right running sum: the same float additions as datasketch's loop.
    if values.shape[-1] == 0:
        return np.zeros(values.shape[:-1])
    return np.cumsum(values * 0.001, axis=-1)[..., -1]


@lru_cache(maxsize=64)
def optimal_bands_rows(threshold: float, permutations: int, fp_weight: float = 0.5,
                       fn_weight: float = 0.5) -> tuple[int, int]:
    low, high = _midpoint_grid(0.0, threshold), _midpoint_grid(threshold, 1.0)
    best, best_error = (0, 0), float("inf")
    for b in range(1, permutations + 1):
        rows = np.arange(1, permutations // b + 1, dtype=np.float64)[:, None]
        fp = _integral(1 - (1 - low[None, :] ** rows) ** float(b))
        fn = _integral(1 - (1 - (1 - high[None, :] ** rows) ** float(b)))
        error = fp * fp_weight + fn * fn_weight
        for r, e in enumerate(error.tolist(), start=1):
            if e < best_error:
                best_error, best = e, (b, r)
    return best
