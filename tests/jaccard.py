"""True Jaccard between every pair of two document sets, on the MinHash stage's own
shingles (filters.minhash.shingles), computed exactly as sparse set intersections:
the ground truth the dedup tests score LSH against."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from scipy.sparse import csr_matrix

from lemur_data.filters.minhash.shingles import batch_shingle_hashes


def _sets(texts: pa.ChunkedArray | pa.Array, mode: str, ngram: int) -> tuple[np.ndarray, ...]:
    hashes, offsets = batch_shingle_hashes(texts, mode, ngram)
    docs = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    return docs, hashes.astype(np.int64), np.int64(len(offsets) - 1)


def jaccard(left: pa.ChunkedArray | pa.Array, right: pa.ChunkedArray | pa.Array,
            mode: str = "code", ngram: int = 5) -> np.ndarray:
    """(len(left), len(right)) array of |A & B| / |A | B| (0 where both are empty)."""
    l_docs, l_hash, l_n = _sets(left, mode, ngram)
    r_docs, r_hash, r_n = _sets(right, mode, ngram)
    # shingle hashes -> dense column numbers shared by both sides
    columns, inverse = np.unique(np.concatenate([l_hash, r_hash]), return_inverse=True)

    def matrix(docs: np.ndarray, cols: np.ndarray, n: np.int64) -> csr_matrix:
        m = csr_matrix((np.ones(docs.size, np.float32), (docs, cols)),
                       shape=(int(n), columns.size))
        m.sum_duplicates()
        m.data[:] = 1
        return m

    a = matrix(l_docs, inverse[:l_hash.size], l_n)
    b = matrix(r_docs, inverse[l_hash.size:], r_n)
    inter = (a @ b.T).toarray()
    sizes_a, sizes_b = np.asarray(a.sum(1)).ravel(), np.asarray(b.sum(1)).ravel()
    return inter / np.maximum(sizes_a[:, None] + sizes_b[None, :] - inter, 1)
