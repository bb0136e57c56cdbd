"""Model presets for Megatron-LM's pretrain_gpt.py: the architecture flags of each model.

Values follow the published Llama-2 configs (Touvron et al. 2023, the HF config.json
files): RMSNorm eps 1e-5, SwiGLU, RoPE base 10000, untied embeddings, no biases, 4096
positions, a 32000-token SentencePiece vocabulary. Megatron pads the vocabulary to a
multiple of 128 x TP unless told the size: `--padded-vocab-size 32000` keeps the
embedding the shape of the Llama-2 checkpoints. Flag names are Megatron-LM's
(megatron/training/arguments.py; checked against `megatron_flags.txt`).
"""

from __future__ import annotations

from dataclasses import dataclass

Flags = dict[str, object]
"""Flag -> value; True is a bare switch (`--swiglu`)."""


@dataclass(frozen=True)
class ModelPreset:
    name: str
    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    query_groups: int | None
    """Grouped-query attention groups; None: multi-head attention."""
    max_positions: int
    vocab_size: int | None
    """The pretrained model's vocabulary (the tokenizer must have exactly this many); None:
    any tokenizer, padded the Megatron way."""
    gpus_hint: str
    """A sensible layout, printed in dry runs."""

    def flags(self, seq_length: int) -> Flags:
        flags: Flags = {
            "--num-layers": self.layers,
            "--hidden-size": self.hidden,
            "--ffn-hidden-size": self.ffn_hidden,
            "--num-attention-heads": self.heads,
        }
        if self.query_groups is not None:
            flags["--group-query-attention"] = True
            flags["--num-query-groups"] = self.query_groups
        flags.update({
            "--seq-length": seq_length,
            "--max-position-embeddings": max(self.max_positions, seq_length),
            "--position-embedding-type": "rope",
            "--rotary-base": 10000,
            "--rotary-percent": 1.0,
            "--swiglu": True,
            "--normalization": "RMSNorm",
            "--norm-epsilon": 1e-5,
            "--untie-embeddings-and-output-weights": True,
            "--disable-bias-linear": True,
            "--attention-dropout": 0.0,
            "--hidden-dropout": 0.0,
            "--init-method-std": 0.02,
        })
        if self.vocab_size is not None:
            flags["--padded-vocab-size"] = self.vocab_size
        return flags


PRESETS: dict[str, ModelPreset] = {p.name: p for p in [
    ModelPreset("llama2-70b", layers=80, hidden=8192, ffn_hidden=28672, heads=64,
                query_groups=8, max_positions=4096, vocab_size=32000,
                gpus_hint="TP 8 x PP 4 (or more), 80 GB GPUs"),
    ModelPreset("llama2-7b", layers=32, hidden=4096, ffn_hidden=11008, heads=32,
                query_groups=None, max_positions=4096, vocab_size=32000,
                gpus_hint="TP 1-2, 80 GB GPUs"),
    # A few million parameters plus the embeddings: a smoke test on one GPU.
    ModelPreset("tiny", layers=4, hidden=256, ffn_hidden=704, heads=4, query_groups=2,
                max_positions=4096, vocab_size=None, gpus_hint="1 GPU"),
]}
