"""Tokens, shingles and their hashes, for MinHash near-deduplication.

Two implementations of one definition:

- a readable per-document reference (`tokens`, `shingles`, `shingle_hash_set`), and
- `batch_shingle_hashes`, vectorized with numpy over a whole Arrow column, which
  never loops in Python per token (tokenizing by regex in Python is the slow
  part of most MinHash implementations).

Tests check that both give the same hashes on real files.

Tokens are runs of "token bytes" of the UTF-8 text, by mode:
  code        identifier characters [A-Za-z0-9_] and every non-ASCII byte
              (so unicode identifiers stay whole); everything else separates.
  words       as code, after lowercasing ASCII letters (prose).
  whitespace  everything but ASCII whitespace.
A shingle is `n` consecutive tokens of one document; a document with fewer
than `n` tokens (but at least one) has one shingle of all its tokens.

Hashes: token = chained fmix64 over its bytes read as little-endian 8-byte
words (the first mixed with its length); shingle = top 32 bits of
fmix64(sum_c M_c * token_c) with fixed odd multipliers M_c, so order matters.
32-bit shingle hashes are what datasketch's MinHash consumes (its
sha1_hash32), and keep shingle sets small for verification.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
import pyarrow as pa

from . import shingle_kernels as shingles_kernel

Mode = Literal["code", "words", "whitespace"]
MODES: tuple[Mode, ...] = ("code", "words", "whitespace")

_MASK64 = (1 << 64) - 1
_LENGTH_KEY = 0x9E3779B97F4A7C15  # token length enters the first word's hash


def _splitmix(state: int, count: int) -> list[int]:
    out = []
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        out.append((z ^ (z >> 31)) | 1)
    return out


# Position multipliers of tokens inside a shingle (fixed: hashes must not change).
_POSITION_MULTIPLIERS = _splitmix(0x5EED_5417_1E5, 64)


def _token_byte_table(mode: Mode) -> np.ndarray:
    table = np.zeros(256, dtype=bool)
    if mode == "whitespace":
        table[:] = True
        table[[0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C]] = False
        return table
    for lo, hi in ((0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), (0x80, 0xFF)):
        table[lo:hi + 1] = True
    table[0x5F] = True
    return table


_TOKEN_BYTES = {mode: _token_byte_table(mode) for mode in MODES}
_CLASS_TABLES = {mode: bytes(table.astype(np.uint8)) for mode, table in _TOKEN_BYTES.items()}
_LOWER_TABLE = bytes(range(0x41)) + bytes(range(0x61, 0x7B)) + bytes(range(0x5B, 0x100))
_MULTIPLIERS = np.array(_POSITION_MULTIPLIERS, dtype=np.uint64)
_PATTERNS = {
    "code": re.compile(r"[0-9A-Za-z_\u0080-\U0010ffff]+"),
    "words": re.compile(r"[0-9A-Za-z_\u0080-\U0010ffff]+"),
    "whitespace": re.compile(r"[^ \t\n\r\x0b\x0c]+"),
}


# ---------------------------------------------------------------- reference

def tokens(text: str, mode: Mode) -> list[str]:
    if mode == "words":
        text = text.translate(_ASCII_LOWER)
    return _PATTERNS[mode].findall(text)


_ASCII_LOWER = str.maketrans({chr(c): chr(c + 32) for c in range(0x41, 0x5B)})


def shingles(text: str, mode: Mode, n: int) -> list[tuple[str, ...]]:
    """Every shingle of `text`, in order, with repeats."""
    toks = tokens(text, mode)
    if not toks:
        return []
    if len(toks) < n:
        return [tuple(toks)]
    return [tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)]


def fmix64(value: int) -> int:
    value ^= value >> 33
    value = (value * 0xFF51AFD7ED558CCD) & _MASK64
    value ^= value >> 33
    value = (value * 0xC4CEB9FE1A85EC53) & _MASK64
    return value ^ (value >> 33)


def token_hash(token: str) -> int:
    """Chained fmix64 over the token's bytes read as little-endian 8-byte words."""
    data = token.encode("utf-8", "surrogatepass")
    size = len(data)
    data += b"\0" * (-size % 8 or 8 * (size == 0))
    h = fmix64(int.from_bytes(data[:8], "little") ^ ((size * _LENGTH_KEY) & _MASK64))
    for at in range(8, size, 8):
        h = fmix64(h ^ int.from_bytes(data[at:at + 8], "little"))
    return h


def shingle_hash(shingle: tuple[str, ...]) -> int:
    total = sum(m * token_hash(t) for m, t in zip(_POSITION_MULTIPLIERS, shingle, strict=False))
    return fmix64(total & _MASK64) >> 32


def shingle_hash_set(text: str, mode: Mode, n: int) -> set[int]:
    return {shingle_hash(s) for s in shingles(text, mode, n)}


def jaccard(a: set[int] | np.ndarray, b: set[int] | np.ndarray) -> float:
    """Jaccard similarity of two shingle sets (sorted unique arrays or sets)."""
    if isinstance(a, set) or isinstance(b, set):
        a, b = set(a), set(b)
        union = len(a | b)
        return len(a & b) / union if union else 0.0
    common = np.intersect1d(a, b, assume_unique=True).size
    union = len(a) + len(b) - common
    return common / union if union else 0.0


# ---------------------------------------------------------------- vectorized

def fmix64_array(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


CHUNK_BYTES = 2 << 20  # bytes hashed together; bounds the per-byte temporaries


def _string_buffers(texts: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(utf-8 bytes, offsets) of a string column without copying the text."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if pa.types.is_string(texts.type):
        texts = texts.cast(pa.large_string())
    _, offsets_buf, data_buf = texts.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[texts.offset:texts.offset + len(texts) + 1]
    data = (np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
            else np.zeros(0, dtype=np.uint8))
    return data, offsets


def batch_shingle_hashes(texts: pa.Array | pa.ChunkedArray, mode: Mode, n: int,
                         compiled: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Shingle hashes of every document: (hashes uint32, offsets int64 of len(texts)+1).

    Document i's shingles are hashes[offsets[i]:offsets[i+1]], in text order
    with repeats, the same values `shingle_hash` gives for `shingles(text)`.
    `compiled`: one numba pass over the bytes when numba is installed, else numpy; None:
    numba once this process has hashed enough to repay starting it
    (`shingle_kernels.worth_compiling`).
    """
    data, offsets = _string_buffers(texts)
    if compiled is None:
        compiled = shingles_kernel.worth_compiling(int(offsets[-1] - offsets[0]))
    if compiled and shingles_kernel.AVAILABLE:
        return shingles_kernel.shingle_hashes(
            data, offsets, _TOKEN_BYTES[mode],
            _LOWER_TABLE if mode == "words" else None,
            _MULTIPLIERS, _LENGTH_KEY, n)
    table = _TOKEN_BYTES[mode]
    tok_parts, start_parts = [], []
    for lo, hi in _pieces(data, int(offsets[0]), int(offsets[-1]), table):
        inner = offsets[(offsets > lo) & (offsets < hi)] - lo
        tok, starts = _token_hashes(data[lo:hi], inner, mode)
        tok_parts.append(tok)
        start_parts.append(starts + lo)
    tok = np.concatenate(tok_parts) if tok_parts else np.zeros(0, dtype=np.uint64)
    starts = np.concatenate(start_parts) if start_parts else np.zeros(0, dtype=np.int64)
    return _shingles(tok, np.diff(np.searchsorted(starts, offsets)), n)


def _pieces(data: np.ndarray, begin: int, end: int, table: np.ndarray):
    """Byte ranges of about CHUNK_BYTES that never cut a token: each ends after a separator."""
    pos = begin
    while pos < end:
        cut = min(pos + CHUNK_BYTES, end)
        if cut < end:
            window = max(pos + 1, cut - 4096)
            separators = np.flatnonzero(~table[data[window:cut]])
            if separators.size:
                cut = window + int(separators[-1]) + 1
            else:  # one token longer than the window: extend to its end
                while cut < end and table[data[cut - 1]]:
                    ahead = np.flatnonzero(~table[data[cut:min(cut + CHUNK_BYTES, end)]])
                    cut = cut + int(ahead[0]) + 1 if ahead.size else min(cut + CHUNK_BYTES, end)
        yield pos, cut
        pos = cut


def _token_hashes(data: np.ndarray, breaks: np.ndarray,
                  mode: Mode) -> tuple[np.ndarray, np.ndarray]:
    """Hash and start offset of every token of `data`; `breaks` are document starts.

    No per-byte integer arithmetic: a token's bytes are read 8 at a time through
    an unaligned uint64 view, masked to the token's length and mixed.
    """
    size = len(data)
    raw = data.tobytes()
    # bytes.translate: the fastest 256-entry table lookup at hand (numpy's take
    # goes through intp indices).
    padded = np.zeros(size + 8, dtype=np.uint8)
    padded[:size] = np.frombuffer(raw.translate(_LOWER_TABLE) if mode == "words" else raw,
                                  dtype=np.uint8)
    inside = np.zeros(size + 2, dtype=np.int8)
    inside[1:-1] = np.frombuffer(raw.translate(_CLASS_TABLES[mode]), dtype=np.int8)
    # Runs of token bytes toggle in and out: their edges alternate start, end, ...
    edges = np.flatnonzero(inside[1:] != inside[:-1])  # bool: numpy's fast nonzero path
    tok_start, tok_end = edges[0::2], edges[1::2]
    # Tokens never run across documents: split where a document starts mid-run.
    glued = breaks[(inside[breaks] == 1) & (inside[breaks + 1] == 1)]
    if glued.size:
        tok_start = np.sort(np.concatenate([tok_start, glued]))
        tok_end = np.sort(np.concatenate([tok_end, glued]))
    if tok_start.size == 0:
        return np.zeros(0, dtype=np.uint64), tok_start
    words = np.ndarray((size + 1,), dtype="<u8", buffer=padded, strides=(1,))
    length = (tok_end - tok_start).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = fmix64_array(_first_bytes(words, tok_start, length) ^ (length * np.uint64(_LENGTH_KEY)))
        at, left, which = tok_start + 8, length, np.arange(tok_start.size)
        while True:
            more = left > np.uint64(8)
            if not more.any():
                break
            at, left, which = at[more], left[more] - np.uint64(8), which[more]
            h[which] = fmix64_array(h[which] ^ _first_bytes(words, at, left))
            at = at + 8
    return h, tok_start


def _first_bytes(words: np.ndarray, at: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The little-endian uint64 of the min(count, 8) bytes at each offset."""
    return words[at] & _BYTE_MASKS[np.minimum(count, np.uint64(8))]


_BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


def _shingles(tok: np.ndarray, tokens_per_doc: np.ndarray,
              n: int) -> tuple[np.ndarray, np.ndarray]:
    docs = len(tokens_per_doc)
    first_tok = np.zeros(docs + 1, dtype=np.int64)
    np.cumsum(tokens_per_doc, out=first_tok[1:])
    count = tok.size
    per_doc = np.where(tokens_per_doc >= n, tokens_per_doc - n + 1, tokens_per_doc > 0)
    out_offsets = np.zeros(docs + 1, dtype=np.int64)
    np.cumsum(per_doc, out=out_offsets[1:])
    if count == 0:
        return np.zeros(0, dtype=np.uint32), out_offsets
    with np.errstate(over="ignore"):
        # Every window of n tokens, from shifted slices; windows that run past a
        # document's end (its last n-1 starts) are dropped below.
        total = tok * np.uint64(_POSITION_MULTIPLIERS[0])
        scratch = np.empty(count, dtype=np.uint64)
        for c in range(1, n):
            np.multiply(tok[c:], np.uint64(_POSITION_MULTIPLIERS[c]), out=scratch[:count - c])
            total[:count - c] += scratch[:count - c]
        keep = np.ones(count, dtype=bool)
        for c in range(1, n):
            keep[(first_tok[1:] - c)[tokens_per_doc >= c]] = False
        # A document with fewer than n tokens has one shingle of all of them.
        short = np.flatnonzero((tokens_per_doc > 0) & (tokens_per_doc < n))
        if short.size:
            starts = first_tok[short]
            lengths = tokens_per_doc[short]
            partial = tok[starts] * np.uint64(_POSITION_MULTIPLIERS[0])
            for c in range(1, n - 1):
                more = lengths > c
                partial[more] += tok[starts[more] + c] * np.uint64(_POSITION_MULTIPLIERS[c])
            total[starts] = partial
            keep[starts] = True
        hashes = (fmix64_array(total[keep]) >> np.uint64(32)).astype(np.uint32)
    return hashes, out_offsets
