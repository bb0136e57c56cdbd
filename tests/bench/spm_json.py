"""A Llama-style SentencePiece BPE model as a Hugging Face tokenizer.json (for datatrove).

datatrove's DocumentTokenizer loads tokenizers' `Tokenizer.from_file`; our default is
the SentencePiece model mistral_common ships. This writes the same model as a
tokenizer.json with the tokenize stage's conversion (the way transformers'
LlamaConverter does it), and reports how many documents encode to the same ids.
"""

from __future__ import annotations

from pathlib import Path


def convert(model_path: str, out: Path) -> None:
    """The tokenize stage's own conversion (stages/tokenize/convert.py)."""
    from lemur_data.stages.tokenize import convert as conversion

    proto = conversion.load_proto(model_path)
    reason = conversion.inexact_reason(proto)
    if reason is not None:
        raise ValueError(f"{model_path}: no exact tokenizer.json conversion ({reason})")
    out.write_text(conversion.tokenizer_json(proto), encoding="utf-8")


def agreement(model_path: str, tokenizer_json: Path, texts: list[str]) -> float:
    """Share of `texts` that both encode to exactly the same ids."""
    import sentencepiece
    from tokenizers import Tokenizer

    sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
    hf = Tokenizer.from_file(str(tokenizer_json))
    ours = sp.encode(texts, out_type=int)
    theirs = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    return sum(a == b for a, b in zip(ours, theirs, strict=True)) / max(len(texts), 1)
