"""A SentencePiece BPE model as a Hugging Face tokenizer.json, where that is exact.

The fast encoder (backends.py) reads tokenizer.json. A Llama-style SentencePiece BPE
model (byte fallback, identity normalizer, "▁" dummy prefix) converts the way
transformers' LlamaConverter does: the vocabulary in id order, the merges recovered
from the vocabulary ranked by piece score, byte fallback, "▁" for spaces.

SentencePiece's BPE encoder merges the adjacent pair of highest score whose union is
a normal piece; BPE with those merges ranked by score does the same when the scores
are distinct. `inexact_reason` lists the model features where that reasoning does
not hold (another normalizer, user-defined pieces matched before the merges, tied
scores, ...): such a model is encoded by sentencepiece itself.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

# sentencepiece_model.proto: ModelProto.SentencePiece.Type and TrainerSpec.ModelType
NORMAL, USER_DEFINED, UNUSED = 1, 4, 5
BPE = 2
CONVERSION = 2  # bump when tokenizer_json's output or the checks change: names the cached files


def _cache_file(model: bytes, suffix: str) -> Path:
    digest = hashlib.sha256(model).hexdigest()[:24]
    return (Path(os.environ.get("LEMUR_DATA_CACHE") or Path.home() / ".cache" / "lemur-data")
            / "tokenizers" / f"spm-{digest}-v{CONVERSION}{suffix}")


def _keep(cache: Path, text: str) -> None:
    try:  # a cache is a convenience: a read-only home only costs the conversion again
        cache.parent.mkdir(parents=True, exist_ok=True)
        scratch = cache.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(text, encoding="utf-8")
        scratch.replace(cache)
    except OSError:
        pass


def cached_tokenizer_json(model: bytes, proto: Any) -> str:
    """`tokenizer_json(proto)`, kept in the user's cache (0.4 s per worker saved)."""
    cache = _cache_file(model, ".json")
    try:
        return cache.read_text(encoding="utf-8")
    except OSError:
        pass
    text = tokenizer_json(proto)
    _keep(cache, text)
    return text


def cached_conversion(model: bytes) -> tuple[str | None, str | None, tuple[str, ...]]:
    """(`inexact_reason`, the tokenizer.json or None when inexact, `tie_probes`) of the
    model's bytes: all three are functions of the bytes and CONVERSION, so they are kept
    in the user's cache beside the tokenizer.json (parsing the model and checking its
    pieces cost each worker ~0.08 s of CPU at every load)."""
    checks = _cache_file(model, ".checks.json")
    try:
        found = json.loads(checks.read_text(encoding="utf-8"))
        why_not, probes = found["inexact_reason"], tuple(found["tie_probes"])
        if why_not is not None:
            return why_not, None, probes
        return None, _cache_file(model, ".json").read_text(encoding="utf-8"), probes
    except (OSError, ValueError, KeyError, TypeError):
        pass
    proto = load_proto(model)
    why_not = inexact_reason(proto)
    probes = tuple(tie_probes(proto))
    json_text = cached_tokenizer_json(model, proto) if why_not is None else None
    _keep(checks, json.dumps({"inexact_reason": why_not, "tie_probes": list(probes)}))
    return why_not, json_text, probes


def load_proto(model: bytes | str) -> Any:
    """The ModelProto of a SentencePiece model's bytes (or of the file at a path)."""
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    proto = model_pb2.ModelProto()  # pyright: ignore[reportAttributeAccessIssue]  # made by protobuf
    proto.ParseFromString(model if isinstance(model, bytes) else Path(model).read_bytes())
    return proto


def inexact_reason(proto: Any) -> str | None:
    """Why the converted model could encode differently, or None when it cannot."""
    trainer, normalizer = proto.trainer_spec, proto.normalizer_spec
    checks = [
        (trainer.model_type == BPE, "not a BPE model"),
        (trainer.byte_fallback, "no byte fallback"),
        (not trainer.treat_whitespace_as_suffix, "whitespace as suffix"),
        (normalizer.name == "identity" and not normalizer.precompiled_charsmap
         and not normalizer.normalization_rule_tsv, f"normalizer {normalizer.name!r}"),
        (normalizer.add_dummy_prefix, "no dummy prefix"),
        (not normalizer.remove_extra_whitespaces, "removes extra whitespace"),
        (not proto.HasField("denormalizer_spec") or not proto.denormalizer_spec.name
         or proto.denormalizer_spec.name == "identity", "a denormalizer"),
        (all(p.type not in (USER_DEFINED, UNUSED) for p in proto.pieces),
         "user-defined or unused pieces"),
    ]
    for ok, reason in checks:
        if not ok:
            return reason
    if _tied_runs(proto) is None:
        return "tied scores of pieces other than runs of one character"
    return None


def _tied_runs(proto: Any) -> dict[str, int] | None:
    """Pieces of tied score: {character: longest run} when each is a run of one
    character (Llama's whitespace pieces "▁▁", "▁▁▁▁", ... all score -1e9), else None.

    Among tied pairs sentencepiece merges the leftmost first and BPE the lowest rank;
    inside a run of one character both end in the same pieces, which `tie_probes`
    makes the load-time check confirm."""
    by_score: dict[float, list[str]] = {}
    for p in proto.pieces:
        if p.type == NORMAL and len(p.piece) > 1:
            by_score.setdefault(p.score, []).append(p.piece)
    runs: dict[str, int] = {}
    for pieces in by_score.values():
        if len(pieces) == 1:
            continue
        for piece in pieces:
            if len(set(piece)) != 1:
                return None
            runs[piece[0]] = max(runs.get(piece[0], 0), len(piece))
    return runs


def tie_probes(proto: Any) -> list[str]:
    """Texts with every run length of each tied character up to twice its longest piece,
    alone and between letters: what the load-time check encodes both ways."""
    texts = []
    for char, longest in sorted((_tied_runs(proto) or {}).items()):
        char = " " if char == "▁" else char
        for n in range(1, 2 * longest + 2):
            texts += [char * n, f"a{char * n}b", f"x\n{char * n}y {char * n}"]
    return texts


def tokenizer_json(proto: Any) -> str:
    """The model as a tokenizer.json string (call only when `inexact_reason` is None)."""
    pieces = list(proto.pieces)
    vocab = {p.piece: i for i, p in enumerate(pieces)}
    merges: list[tuple[str, str, float]] = []
    for p in pieces:
        if p.type != NORMAL:  # control, unknown and byte pieces are never merged into
            continue
        text = p.piece
        local = [(text[:i], text[i:], p.score) for i in range(1, len(text))
                 if text[:i] in vocab and text[i:] in vocab]
        merges += sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]]))
    merges.sort(key=lambda m: m[2], reverse=True)
    specials = [(i, p.piece) for i, p in enumerate(pieces) if p.type in (2, 3)]  # unk, control
    unk = next((p.piece for p in pieces if p.type == 2), None)
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": piece, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for i, piece in specials],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None, "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": unk,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": _merge_list(merges)},
    }, ensure_ascii=False)


def _merge_list(merges: list[tuple[str, str, float]]) -> list[str] | list[list[str]]:
    """The merges as `"a b"` strings, the older of tokenizer.json's two forms: fastokens
    reads them in 0.11 s against 0.19 s as `["a", "b"]` pairs (Llama's 59k merges;
    every Ray worker loads the tokenizer once). The pair form is kept for a model whose
    merged pieces hold a space, which a string could not tell apart."""
    if any(" " in a or " " in b for a, b, _ in merges):
        return [[a, b] for a, b, _ in merges]
    return [f"{a} {b}" for a, b, _ in merges]
