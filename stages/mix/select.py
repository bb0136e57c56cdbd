"""Which documents, and how many of their tokens, each pass of a component uses.

Shared by `split` (hash and bucket of every document) and `pack` (the tokens
each document gives each epoch, and gathering them). The cut of the
fractional epoch itself is decided by `plan` (plan.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xxhash


def hashes_of(ids: list[str], seed: int) -> np.ndarray:
    """A 64-bit hash per document id: fixed by the seed, not by the document's shard."""
    return np.fromiter((xxhash.xxh3_64_intdigest(f"{seed}\x00{i}".encode()) for i in ids),
                       np.uint64, count=len(ids))


def bucket_of(hashes: np.ndarray, bits: int) -> np.ndarray:
    return (hashes >> np.uint64(64 - bits)).astype(np.int64)


def fraction_takes(entry: dict[str, Any], docs: list[tuple[np.ndarray, np.ndarray]],
                   bits: int) -> list[np.ndarray]:
    """Tokens each document gives the fractional epoch (0: none), per shard.

    Documents below the cut bucket give all their tokens; those in the cut
    bucket, in (hash, shard, position) order, give whole until `cut_tokens`
    is reached, and the next one its first tokens and its last (EOS).
    """
    takes, hashes_at, rows = [], [], []
    for shard, (lengths, hashes) in enumerate(docs):
        buckets = bucket_of(hashes, bits)
        takes.append(np.where(buckets < entry["cut_bucket"], lengths, 0))
        at = np.flatnonzero(buckets == entry["cut_bucket"])
        hashes_at.append(hashes[at])
        rows.append(np.stack([np.full(len(at), shard), at, lengths[at]], axis=1))
    if not entry["cut_tokens"]:
        return takes
    keys = np.concatenate(hashes_at)
    rows = np.concatenate(rows).astype(np.int64)
    rows = rows[np.lexsort((rows[:, 1], rows[:, 0], keys))]
    cumulative = np.cumsum(rows[:, 2])
    whole = int(np.searchsorted(cumulative, entry["cut_tokens"], side="right"))
    for shard, position, length in rows[:whole]:
        takes[shard][position] = length
    left = entry["cut_tokens"] - (int(cumulative[whole - 1]) if whole else 0)
    if left:
        shard, position, _ = rows[whole]
        takes[shard][position] = left
    return takes


def pass_takes(entry: dict[str, Any], docs: list[tuple[np.ndarray, np.ndarray]],
               bits: int) -> list[list[np.ndarray]]:
    """Per pass (epoch), per shard, the tokens each document gives."""
    passes = [[lengths for lengths, _ in docs] for _ in range(entry["full_epochs"])]
    if entry["passes"] > entry["full_epochs"]:
        passes.append(fraction_takes(entry, docs, bits))
    return passes


def gather(tokens: np.ndarray, lengths: np.ndarray,
           take: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tokens of the documents with take > 0; a shortened one keeps its last token."""
    keep = take > 0
    if keep.all() and (take == lengths).all():
        return np.asarray(tokens), lengths
    mask = np.repeat(keep, lengths)
    ends = np.cumsum(lengths)
    for doc in np.flatnonzero(keep & (take < lengths)):
        mask[ends[doc] - lengths[doc] + take[doc] - 1:ends[doc] - 1] = False
    return np.asarray(tokens)[mask], take[keep]
