"""A Llama-style SentencePiece BPE model as a Hugging Face tokenizer.json (for datatrove).

datatrove's DocumentTokenizer loads tokenizers' `Tokenizer.from_file`; our default is
the SentencePiece model mistral_common ships. This writes the same model as a
tokenizer.json the way transformers' LlamaConverter does (vocab in id order, merges
recovered from the vocab ranked by piece score, byte fallback, "▁" prefix and spaces),
without needing transformers, and reports how many documents encode to the same ids.
"""

from __future__ import annotations

from pathlib import Path


def convert(model_path: str, out: Path) -> None:
    from sentencepiece import sentencepiece_model_pb2 as model_pb2
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers
    from tokenizers.models import BPE

    proto = model_pb2.ModelProto()
    proto.ParseFromString(Path(model_path).read_bytes())
    vocab = {piece.piece: i for i, piece in enumerate(proto.pieces)}
    scores = {piece.piece: piece.score for piece in proto.pieces}
    merges = []
    for piece, score in scores.items():  # SentencePieceExtractor, as transformers has it
        local = [(piece[:i], piece[i:], score) for i in range(1, len(piece))
                 if piece[:i] in vocab and piece[i:] in vocab]
        merges += sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]]))
    merges.sort(key=lambda m: m[2], reverse=True)
    tokenizer = Tokenizer(BPE(vocab, [(a, b) for a, b, _ in merges], unk_token="<unk>",
                              fuse_unk=True, byte_fallback=True))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                                 normalizers.Replace(" ", "▁")])
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                           decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True)
                                  for t in ("<unk>", "<s>", "</s>")])
    tokenizer.save(str(out))


def agreement(model_path: str, tokenizer_json: Path, texts: list[str]) -> float:
    """Share of `texts` that both encode to exactly the same ids."""
    import sentencepiece
    from tokenizers import Tokenizer

    sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
    hf = Tokenizer.from_file(str(tokenizer_json))
    ours = sp.encode(texts, out_type=int)
    theirs = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    return sum(a == b for a, b in zip(ours, theirs, strict=True)) / max(len(texts), 1)
