"""Tokenize: token ids per document (EOS after each, BOS optional), fused per shard.

Adds `token_ids` (list<uint16> when the vocabulary fits Megatron's uint16
storage, else list<int32>) and `tokens` (their count). Removes nothing.
Tokenizing is a pure function of the text and the tokenizer file, so the
column is the same whichever worker encodes which shard.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import PositiveInt

from .. import storage
from ..base import DocumentStage, ShardContext, StageParams, StageResult
from ..hooks import Cost, CostInput
from .tokenizer import TextTokenizer, TokenizerConfig, load_tokenizer

TOKEN_IDS = "token_ids"
TOKENS = "tokens"


class TokenizeParams(StageParams):
    tokenizer: TokenizerConfig = TokenizerConfig()
    """The manifest's `tokenizer:`."""
    batch_docs: PositiveInt = 1024
    """Documents per encode call (bounds the memory of one batch's ids)."""


class Tokenize(DocumentStage[TokenizeParams]):
    name = "tokenize"
    about = (
        "token ids per document, EOS after each (removes nothing)")
    # MB/s per core (code, text): fastokens, 33 on stdlib code and 27 on help() prose
    # (2026-12-01, load average 11-23 on the shared 2 cores; 3.0 with sentencepiece):
    # `python -m tests.bench.bench_tokenize 8`, charged a little under.
    rate_mb_s = (30.0, 25.0)

    @classmethod
    def cost(cls, params: TokenizeParams | None, size: CostInput) -> Cost:
        """Token ids as uint16 (~3.5 bytes of text each), plus parquet overhead."""
        base = super().cost(params, size)
        return Cost(base.core_hours, size.input_bytes / 3.5 * 2 * 1.2, base.memory_mb)
    Params = TokenizeParams

    report_hidden = ("encoder",)  # said in a sentence (card_notes), not a figure table

    @classmethod
    def card_notes(cls, entry: dict[str, Any]) -> list[str]:
        """Which encoder ran (its run_facts) and, if not fastokens, why."""
        encoder = entry.get("encoder")
        if not encoder:
            return []
        if encoder.get("note"):
            return [f"Encoded by {encoder['engine']}, the reference ({encoder['note']})."]
        return [f"Encoded by {encoder['engine']}, checked at load to give the ids of "
                f"{encoder['reference']}."]

    @classmethod
    def explain(cls, doc: dict[str, Any], entry: dict[str, Any], work: Any) -> list[str]:
        return [f"{doc['tokens']:,} tokens (EOS included)"] if doc.get("tokens") else []

    def __init__(self, params: TokenizeParams) -> None:
        super().__init__(params)
        self.tokenizer: TextTokenizer | None = None

    def setup(self) -> None:
        self.tokenizer = load_tokenizer(self.params.tokenizer)

    def added_columns(self) -> list[pa.Field]:
        wide = self.tokenizer is not None and not self.tokenizer.uint16
        return [pa.field(TOKEN_IDS, pa.list_(pa.int32() if wide else pa.uint16())),
                pa.field(TOKENS, pa.int64())]

    def run_facts(self) -> dict[str, Any]:
        """The encoder (fastokens or the reference) with versions, and why if not fastokens."""
        if self.tokenizer is None:
            self.setup()
        assert self.tokenizer is not None
        return {"encoder": self.tokenizer.describe()}

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        if self.tokenizer is None:
            self.setup()
        assert self.tokenizer is not None
        texts = docs.column("text").to_pylist()
        reused = earlier_ids(ctx.earlier, docs.column("id").to_pylist(), texts)
        if reused is None:
            ids = encode_documents(self.tokenizer, texts, self.params.tokenizer,
                                   self.params.batch_docs)
        else:
            known, where = reused
            missing = [n for n, at in enumerate(where) if at < 0]
            fresh = encode_documents(self.tokenizer, [texts[n] for n in missing],
                                     self.params.tokenizer, self.params.batch_docs)
            # rows of concat(known, fresh) in document order: the ids of full encoding
            order = np.asarray(where, np.int64)
            order[missing] = len(known) + np.arange(len(missing))
            pool = pa.concat_arrays([known.cast(fresh.type), fresh])
            ids = _offsets_from_zero(pool.take(pa.array(order)))
        table = docs.append_column(TOKEN_IDS, ids)
        table = table.append_column(TOKENS, ids.value_lengths().cast(pa.int64()))
        return StageResult.keep_all(table)


def earlier_ids(paths: tuple[str, ...], ids: list[str], texts: list[str]
                ) -> tuple[pa.ListArray, list[int]] | None:
    """Token ids an earlier round (`paths`, newest first) computed for these documents:
    (its token_ids, and per document the row there, -1 for none). A row counts only for
    the same id and the same text, so the ids are the ones encoding gives. None when no
    earlier file exists or matches."""
    wanted = dict(zip(ids, range(len(ids)), strict=True))
    where = [-1] * len(ids)
    found: list[pa.Array] = []
    base = 0
    for path in paths:
        if not storage.exists(path):
            continue
        earlier = storage.read_parquet(path, ["id", "text", TOKEN_IDS])
        rows = []
        for row, (doc_id, text) in enumerate(zip(earlier.column("id").to_pylist(),
                                                 earlier.column("text").to_pylist(),
                                                 strict=True)):
            n = wanted.get(doc_id)
            if n is not None and where[n] < 0 and texts[n] == text:
                where[n] = base + len(rows)
                rows.append(row)
        if rows:
            found.append(earlier.column(TOKEN_IDS).take(pa.array(rows, pa.int64()))
                         .combine_chunks())
            base += len(rows)
        if all(at >= 0 for at in where):
            break
    if not found:
        return None
    return pa.concat_arrays(found), where


def _offsets_from_zero(lists: pa.Array) -> pa.ListArray:
    """`lists` rebuilt from its values: offsets from 0, as `encode_documents` makes them."""
    assert isinstance(lists, pa.ListArray)
    flat = lists.flatten()
    lengths = lists.value_lengths().to_numpy(zero_copy_only=False)
    offsets = np.zeros(len(lists) + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), flat)


def token_dtype(tokenizer: TextTokenizer) -> np.dtype:
    return np.dtype(np.uint16 if tokenizer.uint16 else np.int32)


def encode_documents(tokenizer: TextTokenizer, texts: list[str], config: TokenizerConfig,
                     batch_docs: int = 1024) -> pa.ListArray:
    """Token ids of every text with BOS/EOS as configured, as one Arrow list array."""
    dtype = token_dtype(tokenizer)
    head = _special(tokenizer.bos_id, "BOS", config) if config.bos else []
    tail = _special(tokenizer.eos_id, "EOS", config) if config.eos else []
    lengths: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for start in range(0, len(texts), batch_docs):
        flat, counts = tokenizer.encode_flat(texts[start:start + batch_docs])
        flat = flat.astype(dtype, copy=False)
        if head or tail:
            flat, counts = _add_specials(flat, counts, head, tail, dtype)
        lengths.append(counts)
        values.append(flat)
    counts = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    flat = np.concatenate(values) if values else np.zeros(0, dtype)
    if len(flat) >= 2**31:
        raise ValueError(f"{len(flat)} tokens in one shard: lower shard.max_bytes")
    offsets = np.zeros(len(counts) + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat))


def _special(token_id: int | None, name: str, config: TokenizerConfig) -> list[int]:
    if token_id is None:  # load_tokenizer refuses this already
        raise ValueError(f"tokenizer {config.describe()} has no {name} token")
    return [token_id]


def _add_specials(flat: np.ndarray, counts: np.ndarray, head: list[int], tail: list[int],
                  dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Insert BOS before / EOS after each document's ids, vectorized."""
    extra = len(head) + len(tail)
    new_counts = counts + extra
    ends = np.cumsum(new_counts)
    starts = ends - new_counts
    out = np.empty(int(ends[-1]) if len(ends) else 0, dtype)
    body = np.ones(len(out), bool)
    if head:
        out[starts] = head[0]
        body[starts] = False
    if tail:
        out[ends - 1] = tail[0]
        body[ends - 1] = False
    out[body] = flat
    return out, new_counts
