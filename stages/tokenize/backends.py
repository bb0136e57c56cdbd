"""The encoder behind a tokenizer: fastokens where it gives the reference's ids, else the reference.

The reference is what defines the ids: sentencepiece for a SentencePiece model (what
Megatron's Llama2Tokenizer loads), `tokenizers` for a tokenizer.json. fastokens
(PyPI, Apache-2.0) reads tokenizer.json and encodes a batch into one flat uint32
buffer, with no Python object per token; measured at 6x sentencepiece's speed on
one core (docs/benchmarks.md). A SentencePiece model is converted to tokenizer.json
first (convert.py) when the conversion is exact for its features.

Before it is used, the fast encoder must give the reference's ids on PROBE (every
kind of text the exactness test covers, in small); any difference, or a model form
the conversion does not cover, leaves the reference encoding, and `note` says why
(the run's card shows it). Text that spells a special token (`<s>`, `</s>`,
`<|endoftext|>`) is encoded as text by every backend.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

PROBE = [
    "",
    "def f(x):\n\treturn x  # tabs, CRLF\r\n    and  runs   of spaces\n\n\n",
    " leading space, trailing space ",
    "Übergrößenträger — naïve café, façade; ½ ¾ ﬁ ＡＢＣ（全角）",
    "Приключения Шерлока Холмса. Ελληνικά κείμενα. Հայերեն. ქართული",
    "日本語の文章とカタカナ、中文句子，한국어 문장입니다.",
    "مرحبا بالعالم (RTL) ‏שלום עולם‎ हिन्दी पाठ বাংলা தமிழ் ไทย ລາວ ខ្មែរ ሰላም",
    "zero\u200bwidth\u200d joiner \ufeffBOM \u2028 sep \x00 nul \x7f",
    "emoji 😀🇫🇷👩‍💻 and rare 𠜎𠜱 ꙮ 𓀀",
    "<s> literal </s> and <|endoftext|> <unk> [CLS] <pad>",
    "numbers 1234567890 3.14159 0xDEADBEEF 1e-10 ١٢٣ ०१२",
]


@dataclass(frozen=True)
class Choice:
    """The chosen encoder and what the run records about it."""

    fast: Any | None
    """A fastokens.Tokenizer, or None: the reference encodes."""
    engine: str
    """`fastokens 0.3.5` or the reference's name and version."""
    note: str
    """Why the reference encodes ('' when fastokens does)."""


@cache
def reference_name(kind: str) -> str:
    """`sentencepiece 0.2.3`: a package and its installed version (read once per process:
    each lookup parses the package's METADATA, and every tokenize task reports it)."""
    try:
        return f"{kind} {version(kind)}"
    except PackageNotFoundError:
        return f"{kind} (not installed)"


def choose(kind: str, reference: Any, json_text: str | None, why_not: str | None,
           threads: int, probes: tuple[str, ...] = ()) -> Choice:
    """fastokens on `json_text` if it matches `reference` on PROBE (and `probes`, what
    the model's form asks to check), else the reference."""
    ref = reference_name(kind)
    if json_text is None:
        return Choice(None, ref, f"fastokens is not exact for this model ({why_not})")
    try:
        import fastokens
    except ImportError:
        return Choice(None, ref, "fastokens is not installed")
    # read once, at the first encode of the process (a Ray worker: one per core)
    os.environ["FASTOKENS_BPE_THREADS"] = str(threads)
    texts = PROBE + list(probes)
    want = reference_encode(kind, reference, texts)
    try:
        fast = fastokens.Tokenizer.from_json_str(json_text)
        got = split(*flat_encode(fast, texts))
    except (ValueError, RuntimeError, OverflowError) as e:
        return Choice(None, ref, f"fastokens fails on this model ({e})")
    if got != want:
        bad = next(i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b)
        return Choice(None, ref, f"fastokens differs from it on probe text {bad}")
    return Choice(fast, f"fastokens {version('fastokens')}", "")


def flat_encode(fast: Any, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(ids as uint32, per-text counts as int64), special-token text encoded as text."""
    ids, offsets = fast.encode_batch_flat(texts, add_special_tokens=False,
                                          split_special_tokens=True)
    return (np.frombuffer(ids, np.uint32),
            np.diff(np.frombuffer(offsets, np.uint64)).astype(np.int64))


def split(flat: np.ndarray, counts: np.ndarray) -> list[list[int]]:
    ends = np.cumsum(counts)
    return [flat[e - c:e].tolist() for e, c in zip(ends, counts, strict=True)]


def reference_encode(kind: str, reference: Any, texts: list[str]) -> list[list[int]]:
    """The ids that define exactness, no special token added or parsed from the text."""
    if kind == "sentencepiece":  # control pieces never match text in sentencepiece
        return reference.encode(texts, out_type=int)
    return [e.ids for e in reference.encode_batch_fast(texts, add_special_tokens=False)]
