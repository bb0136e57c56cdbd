"""The run's tokenizer as Megatron loads it, copied next to train.sh.

Training nodes may have no Hub access, so `launch` stages the exact tokenizer file
the tokenize stage used: a SentencePiece model for Megatron's Llama2Tokenizer, or a
tokenizer.json folder for its HuggingFaceTokenizer.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Literal

from ...stages import storage
from ...stages.tokenize.tokenizer import (
    DEFAULT_PACKAGE_MODEL,
    MAX_TOKENIZER_BYTES,
    TokenizerConfig,
    package_file,
)
from ...stages.user_file import read_user_file


@dataclass(frozen=True)
class TokenizerFiles:
    """The tokenizer as Megatron loads it: its type and the --tokenizer-model path."""

    type: Literal["Llama2Tokenizer", "HuggingFaceTokenizer"]
    model: str
    file: str
    """The tokenizer file itself (the model path for SentencePiece, tokenizer.json in the
    folder for Hugging Face)."""


def tokenizer_files(launch_dir: str, kind: Literal["sentencepiece", "json"]) -> TokenizerFiles:
    if kind == "sentencepiece":
        path = storage.join(launch_dir, "tokenizer.model")
        return TokenizerFiles("Llama2Tokenizer", path, path)
    folder = storage.join(launch_dir, "tokenizer")
    return TokenizerFiles("HuggingFaceTokenizer", folder, storage.join(folder, "tokenizer.json"))


def expected_tokenizer_kind(config: TokenizerConfig) -> Literal["sentencepiece", "json"]:
    if config.file:
        return "json"
    source = config.sentencepiece or config.package or (DEFAULT_PACKAGE_MODEL
                                                        if not config.hf else "")
    return "json" if source.endswith(".json") else "sentencepiece"


def stage_tokenizer(config: TokenizerConfig, launch_dir: str) -> TokenizerFiles:
    """Copy the run's tokenizer next to train.sh so the training nodes need no Hub access.

    SentencePiece models load as Megatron's Llama2Tokenizer (EOD = </s>, no BOS: what the
    tokenize stage wrote); a tokenizer.json loads as HuggingFaceTokenizer from a folder.
    """
    source = tokenizer_source(config)
    kind: Literal["sentencepiece", "json"] = "json" if source.endswith(".json") \
        else "sentencepiece"
    files = tokenizer_files(launch_dir, kind)
    storage.write_bytes_atomic(files.file, read_user_file(
        source, what=f"tokenizer ({config.describe()})", max_bytes=MAX_TOKENIZER_BYTES))
    if kind == "json":  # AutoTokenizer needs to be told the class of a bare tokenizer.json
        storage.write_bytes_atomic(storage.join(files.model, "tokenizer_config.json"),
                                   json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"})
                                   .encode())
    return files


def tokenizer_source(config: TokenizerConfig) -> str:
    """Path (local or fsspec) of the tokenizer file the run used."""
    if config.hf:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError

        token = os.environ.get("HF_TOKEN")
        try:  # the SentencePiece model when the repo has one, as the tokenize stage does
            return hf_hub_download(config.hf, "tokenizer.model", revision=config.revision,
                                   token=token)
        except EntryNotFoundError:
            return hf_hub_download(config.hf, "tokenizer.json", revision=config.revision,
                                   token=token)
    if config.file or config.sentencepiece:
        return str(config.file or config.sentencepiece)
    return package_file(config.package or DEFAULT_PACKAGE_MODEL)
