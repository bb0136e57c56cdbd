"""The manifest's schema: `Manifest` and its parts (sources, shards, mixture, output,
tokenizer, train), strict pydantic models that refuse unknown keys."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ByteSize,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    PrivateAttr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from ...filters.langid import code as code_detector
from ...stages.base import StageParams
from ...stages.ingest import ReaderConfig
from ...stages.readers.common import SourceInfo
from ...stages.registry import STAGES
from ...stages.storage import MAPPABLE_COLUMNS
from ...stages.tokenize.tokenizer import TokenizerConfig, engine_versions
from ..launch.plan import TrainConfig


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _positive_bytes(value: ByteSize) -> ByteSize:
    if value <= 0:
        raise ValueError("must be more than 0 bytes")
    return value


# A size that divides or bounds something: 0 would divide by zero or keep nothing.
PositiveByteSize = Annotated[ByteSize, AfterValidator(_positive_bytes)]
# The most tokens a mixture may ask for: 10^15, some 30 times the largest pretraining
# sets; more only makes the packer repeat the data for ever (1e30 hung in pack).
MAX_TOTAL_TOKENS = 1e15
# Seeds feed 64-bit hashes (xxhash, numpy): a 5,000-digit one failed deep in a task.
MAX_SEED = 2**63 - 1


class ShardSpec(Strict):
    max_docs: PositiveInt = 20000
    """Most documents in one shard (one Ray task's worth of work)."""
    max_bytes: PositiveByteSize = ByteSize(256 * 2**20)
    """About the most text bytes in one shard."""


class SourceSpec(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    kind: Literal["code", "text"]
    reader: ReaderConfig
    columns: dict[str, str] = {}
    """Document column -> input column, e.g. {text: content, repo: max_stars_repo_name}."""
    lang: str | None = None
    """Fixed language of every document (e.g. Python for stack-python); for code, a
    language linguist renamed is stored under The Stack's name (`Rocq Prover` -> Coq)."""
    max_doc_bytes: PositiveByteSize = ByteSize(16 * 2**20)
    """Larger documents are quarantined with reason ingest:too_large."""
    on_bad_file: Literal["fail", "quarantine"] = "quarantine"
    """An unreadable file stops the run (fail) or is recorded in removed/ (quarantine)."""
    size_hint: ByteSize | None = None
    """Approximate input size, for `plan` estimates when the input cannot be listed."""

    @field_validator("columns")
    @classmethod
    def _known_targets(cls, columns: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(columns) - set(MAPPABLE_COLUMNS))
        if unknown:
            raise ValueError(f"unknown document column(s) {unknown}; "
                             f"mappable columns are {list(MAPPABLE_COLUMNS)}")
        return columns

    @field_validator("lang")
    @classmethod
    def _stack_name(cls, lang: str | None, info: ValidationInfo) -> str | None:
        if lang is None or info.data.get("kind") != "code":
            return lang
        return code_detector.stack_name(lang)

    def info(self) -> SourceInfo:
        return SourceInfo(self.name, self.kind, dict(self.columns), self.lang,
                          int(self.max_doc_bytes), self.on_bad_file)


class TokenizerSpec(TokenizerConfig):
    """`tokenizer:`: hf / file / sentencepiece / package, or none for the offline default
    (the 32k Llama-style SentencePiece model mistral_common ships)."""


class MixtureSpec(Strict):
    total_tokens: Annotated[PositiveFloat, Field(le=MAX_TOTAL_TOKENS)]
    weights: dict[str, PositiveFloat]
    """By kind (code, text) or by source name; per-language with `code:Python`."""
    read: Literal["all", "needed"] = "all"
    """`needed`: read only the seeded prefix of each source's units that the mixture
    will use (pipeline/budget.py); `all`: every unit of every source."""
    read_margin: NonNegativeFloat = 0.15
    """With read: needed, read for target x (1 + margin) expected kept tokens."""
    pilot_units: PositiveInt | None = None
    """With read: needed, the pilot reads at least this many units (or 1%) per source;
    unset: a sample sized from the mixture's need (pipeline/budget.py)."""

    @model_serializer(mode="wrap")
    def _without_budget_defaults(self, handler: SerializerFunctionWrapHandler,
                                 info: SerializationInfo) -> dict[str, Any]:
        # With read: all the budget keys change nothing: leaving them out keeps the
        # fingerprint and manifest.json of a run byte-identical to before they existed.
        data = handler(self)
        if self.read == "all":
            for key in ("read", "read_margin", "pilot_units"):
                data.pop(key, None)
        return data


class MegatronOutputSpec(Strict):
    max_shard_bytes: PositiveByteSize = ByteSize(8 * 10**9)
    blend: Literal["separate", "pre_blended"] = "separate"
    seq_length: PositiveInt | None = None


class OutputSpec(Strict):
    megatron: MegatronOutputSpec | None = None


class TrainSpec(TrainConfig):
    """`train:`: the Megatron-LM run on the packed data (pipeline/launch/)."""


class Manifest(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    shard: ShardSpec = ShardSpec()
    sources: list[SourceSpec] = Field(min_length=1)
    stages: list[dict[str, dict[str, Any] | None]] = []
    tokenizer: TokenizerSpec | None = None
    mixture: MixtureSpec | None = None
    output: OutputSpec | None = None
    train: TrainSpec | None = None
    sample: int | float | None = None
    """A seeded sample of every source for tuning (pipeline/sample.py): a fraction
    (0 < F < 1) of each source's bytes, or N documents per source. Not for training."""
    _expansions: dict[str, str] = PrivateAttr(default_factory=dict)
    """Placeholder as written ({stdlib}, ${HOME}) -> the value it was expanded to: what
    published files write back in place of the value (pipeline/publish/public.py)."""

    @field_validator("sample")
    @classmethod
    def _sample(cls, value: int | float | None) -> int | float | None:
        from ..sample import check_sample

        return None if value is None else check_sample(value)

    @model_serializer(mode="wrap")
    def _without_unset_sample(self, handler: SerializerFunctionWrapHandler,
                              info: SerializationInfo) -> dict[str, Any]:
        # A full run has no `sample` key: its fingerprint and manifest.json stay what
        # they were before samples existed.
        data = handler(self)
        if isinstance(data, dict) and data.get("sample", 0) is None:
            data.pop("sample")
        return data

    @property
    def expansions(self) -> dict[str, str]:
        return dict(self._expansions)

    def source(self, name: str) -> SourceSpec:
        return next(s for s in self.sources if s.name == name)

    @property
    def stage_specs(self) -> list[StageSpec]:
        specs = []
        for entry in self.stages:
            (name, params), = entry.items()
            specs.append(StageSpec(name, STAGES[name].Params.model_validate(params or {})))
        return specs

    @property
    def packs(self) -> bool:
        """The run ends by mixing and packing Megatron data (`<run>/megatron/`)."""
        return self.mixture is not None or bool(self.output and self.output.megatron)

    @property
    def tokenizes(self) -> bool:
        """The last document step tokenizes (asked for, or needed to pack)."""
        return self.tokenizer is not None or self.packs

    @property
    def detects_code_language(self) -> bool:
        """A code source without a fixed `lang`: go-enry labels its documents."""
        return any(s.kind == "code" and s.lang is None for s in self.sources)

    def fingerprint(self) -> str:
        """Hash of everything that decides the output (used to refuse mixing runs).

        `train:` decides only launch/train.sh, rewritten at every build's end: changing it
        must not refuse the run folder. A tokenizing run also holds the versions of the
        encoders (stages/tokenize/backends.py)."""
        dumped = self.model_dump(mode="json", exclude={"train"})
        if self.detects_code_language:  # go-enry's version decides code labels too
            dumped["code_language_detector"] = code_detector.available() or code_detector.detector()
        if self.tokenizes:  # ids are the reference's whichever encodes; a new version may not be
            dumped["tokenizer_engines"] = engine_versions()
        canonical = json.dumps(dumped, sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StageSpec:
    name: str
    params: StageParams
