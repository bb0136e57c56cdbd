"""The manifest: one YAML file that says what to build, validated strictly.

Unknown keys, wrong types and missing fields are errors that name the key path
(`sources[2].reader.paths`) and what was expected. Parameters typed `LocalPath`
(stages/paths.py) may use placeholders for what every Python install has
({stdlib}, {purelib}, {platlib}, {include}), {manifest_dir}, and ${ENV_VARS};
relative local paths are relative to the manifest file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
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
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from ..filters.langid import code as code_detector
from ..stages.base import StageParams
from ..stages.ingest import READERS, ReaderConfig
from ..stages.paths import resolve_paths
from ..stages.readers.common import SourceInfo
from ..stages.registry import STAGE_INFO, STAGES
from ..stages.storage import MAPPABLE_COLUMNS
from ..stages.tokenize.tokenizer import TokenizerConfig, engine_versions
from ..stages.user_file import MiB, UserFileError, read_user_file
from .launch.plan import TrainConfig


class ManifestError(Exception):
    """A manifest that cannot be used; each problem names its key path."""

    def __init__(self, where: str, problems: list[str]) -> None:
        self.where = where
        self.problems = problems
        super().__init__(f"{where}: invalid manifest\n" + "\n".join(f"  - {p}" for p in problems))


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
        from .sample import check_sample

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


# A manifest is a few KB; these bound what a hostile file can cost before it is refused.
MAX_MANIFEST_BYTES = 4 * MiB
MAX_YAML_NODES = 100_000


@dataclass(frozen=True)
class StageSpec:
    name: str
    params: StageParams


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read, expand placeholders and validate a manifest file."""
    where = str(path)
    text = ""
    try:
        text = read_user_file(path, what="manifest", max_bytes=MAX_MANIFEST_BYTES).decode()
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        _check_expansion(root)  # before anything walks the tree with aliases expanded
        duplicates = _duplicate_keys(root)
        raw = yaml.safe_load(text)
    except FileNotFoundError:
        raise ManifestError(where, ["file not found"]) from None
    except IsADirectoryError:
        raise ManifestError(where, ["is a folder; give the manifest's YAML file"]) from None
    except UserFileError as error:
        raise ManifestError(where, [str(error).removeprefix(f"{where}: ")]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ManifestError(where, [f"cannot be read: {error}"]) from None
    except yaml.YAMLError as error:
        raise ManifestError(where, [f"not valid YAML: {error}"]) from None
    except RecursionError:
        raise ManifestError(where, ["nested too deeply to be a manifest"]) from None
    except _ExpansionError as error:
        raise ManifestError(where, [str(error)]) from None
    except ValueError as error:  # a scalar YAML cannot construct: an int of 5,000 digits
        raise ManifestError(where, _unconstructible(text, error)) from None
    if duplicates:
        raise ManifestError(where, duplicates)
    if not isinstance(raw, dict):
        raise ManifestError(where, ["top level must be a mapping of keys (name, sources, ...)"])
    return parse_manifest(raw, where, Path(path).resolve().parent)


class _ExpansionError(ValueError):
    pass


def _unconstructible(text: str, error: ValueError) -> list[str]:
    """Where YAML could not build a value: Python refuses to read an integer of more than
    4,300 digits (sys.get_int_max_str_digits), and no manifest key wants one."""
    found = []
    stack = [yaml.compose(text, Loader=yaml.SafeLoader)]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":int") \
                and len(node.value) > 100:
            found.append(f"line {node.start_mark.line + 1}: a number of {len(node.value):,} "
                         "digits; no manifest key takes one")
        stack += _children(node)
    return sorted(found) or [f"a value YAML cannot build: {error}"]


def _check_expansion(root: yaml.Node | None) -> None:
    """Refuse YAML whose aliases expand past MAX_YAML_NODES nodes, or refer to themselves.

    Composing keeps an alias as a shared node, so a 525-byte "billion laughs" composes at
    once; every walk of the loaded value (duplicate keys, placeholders, validation) then
    visits each alias again, exponentially. The expanded size is counted here in linear
    time (each distinct node once, its size remembered)."""
    if root is None:
        return
    size: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            size[key] = 1 + sum(size[id(child)] for child in _children(node))
            if size[key] > MAX_YAML_NODES:
                raise _ExpansionError(
                    f"YAML aliases expand to more than {MAX_YAML_NODES} values (line "
                    f"{node.start_mark.line + 1}); a manifest needs far fewer: write the "
                    "values out or use fewer nested aliases")
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise _ExpansionError(f"a YAML alias refers to a value that holds it (line "
                                  f"{node.start_mark.line + 1}); a manifest cannot be recursive")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _duplicate_keys(node: yaml.Node | None, path: str = "") -> list[str]:
    """`key.path: duplicate key` for each mapping key given twice. YAML loaders keep the
    last silently, so a second `stages:` would drop the first without a word."""
    problems: list[str] = []
    if isinstance(node, yaml.MappingNode):
        first: dict[Any, int] = {}
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else None
            where = f"{path}.{name}" if path else str(name)
            if name is not None and name in first:
                problems.append(f"{where}: duplicate key (lines {first[name]} and "
                                f"{key.start_mark.line + 1}); give each key once")
            elif name is not None:
                first[name] = key.start_mark.line + 1
            problems += _duplicate_keys(value, where)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            problems += _duplicate_keys(item, f"{path}[{i}]")
    return problems


def parse_manifest(raw: dict[str, Any], where: str = "<manifest>",
                   base_dir: Path | None = None) -> Manifest:
    base_dir = base_dir or Path.cwd()
    problems: list[str] = []
    expansions: dict[str, str] = {}
    raw = _expand_paths(raw, base_dir, problems, expansions)
    problems += _non_finite(raw)
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as error:
        # the stages' own parameters too, so every error shows in one pass
        stages = raw.get("stages")
        stages = stages if isinstance(stages, list) else []
        raise ManifestError(where, problems + _describe(error) + _check_stages(stages)) from None
    problems += _check_stages(manifest.stages) + _check_references(manifest) \
        + _check_resolvable(manifest)
    if problems:
        raise ManifestError(where, problems)
    manifest._expansions.update(expansions)
    return manifest


def _non_finite(node: Any, where: str = "") -> list[str]:
    """`.inf` and `.nan` anywhere in the manifest: YAML reads them as floats, which every
    float key would take (weights, thresholds, budgets) and a stage then hangs or
    crashes on. No key of a manifest means anything by them."""
    if isinstance(node, float) and not math.isfinite(node):
        return [f"{where or '<manifest>'}: {node} is not a finite number"]
    if isinstance(node, dict):
        return [p for k, v in node.items()
                for p in _non_finite(v, f"{where}.{k}" if where else str(k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _non_finite(v, f"{where}[{i}]")]
    return []


def _check_resolvable(manifest: Manifest) -> list[str]:
    """What a build would otherwise find missing only when a late stage gets to it: the
    tokenizer's file, and mixture keys that no document can match."""
    problems = []
    tokenizer = manifest.tokenizer
    if tokenizer is not None:
        for key in ("file", "sentencepiece"):
            path = getattr(tokenizer, key)
            if path and "://" not in path and not os.path.isfile(path):
                what = "is a folder" if os.path.isdir(path) else "no such file"
                problems.append(f"tokenizer.{key}: {path}: {what}")
        if tokenizer.package:
            problems += _check_package_file(tokenizer.package)
    if manifest.mixture:
        problems += _check_weight_languages(manifest)
        from ..stages.mix.params import MixParams, components_of

        try:
            components_of(MixParams(weights=dict(manifest.mixture.weights),
                                    total_tokens=manifest.mixture.total_tokens))
        except ValueError as error:
            problems.append(f"mixture.weights: {error}")
    return problems


def _check_package_file(spec: str) -> list[str]:
    from ..stages.tokenize.tokenizer import package_file

    try:
        package_file(spec)
    except (ValueError, ImportError, OSError) as error:
        return [f"tokenizer.package: {error}"]
    return []


def _check_weight_languages(manifest: Manifest) -> list[str]:
    """`code:Pyhton`: a language no code document can have (The Stack's names, which
    langid and ingest give, or a source's own `lang`) matches nothing, and the mix found
    it only after every stage had run. A weight key is a component's name, matched as
    written: an alias (`python`, `Rocq Prover`) is refused with The Stack's name."""
    assert manifest.mixture is not None
    fixed = {s.lang for s in manifest.sources if s.lang}
    kinds = {s.name: s.kind for s in manifest.sources}
    if code_detector.available() is not None:
        return []  # no detector to ask: the mix still refuses an empty component
    problems = []
    for key in manifest.mixture.weights:
        base, _, lang = key.removesuffix("@repo").partition(":")
        if not lang or (kinds.get(base, base) != "code") or lang in fixed:
            continue
        if code_detector.language_by_name(lang) != lang:
            known = code_detector.language_by_name(lang)
            hint = f" (The Stack's name is {known!r})" if known else ""
            problems.append(f"mixture.weights.{key}: no code language {lang!r}{hint}; "
                            "languages are The Stack's names (Python, C++, Jupyter Notebook) "
                            "or a source's `lang`")
    return problems


def _describe(error: ValidationError, prefix: str = "") -> list[str]:
    """Pydantic errors as `key.path: message` lines."""
    lines = []
    for item in error.errors():
        path = prefix + _key_path(item["loc"])
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        elif item["type"] == "missing":
            message = "required key is missing"
        elif item["type"] == "union_tag_invalid":
            expected = item.get("ctx", {}).get("expected_tags")
            message = f"unknown reader type; expected one of {expected}"
        elif item["type"] == "union_tag_not_found":
            message = f"reader needs a `type` key, one of: {', '.join(READERS)}"
        given = item.get("input")
        if item["type"] not in ("missing", "extra_forbidden") and not isinstance(given, dict):
            message += f" (got {_shown(given)})"
        lines.append(f"{path}: {message}")
    return lines


def _shown(value: Any) -> str:
    """A value as an error shows it: short (a 5,000-digit int cannot even be printed)."""
    if isinstance(value, int) and value.bit_length() > 256:
        return f"a number of {value.bit_length():,} bits"
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _key_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif i > 0 and loc[i - 1] == "reader" and part in READERS:
            continue  # pydantic's discriminator tag is not a key the user wrote
        else:
            out += ("." if out else "") + str(part)
    return out


def _check_stages(stages: list[Any]) -> list[str]:
    problems = []
    for i, entry in enumerate(stages):
        if not isinstance(entry, dict) or not all(
                isinstance(p, dict | None) for p in entry.values()):
            continue  # the schema's own error names it
        if len(entry) != 1:
            problems.append(f"stages[{i}]: each stage is a mapping of one name to its "
                            f"parameters (got keys {sorted(entry)})")
            continue
        (name, params), = entry.items()
        if name not in STAGES:
            problems.append(f"stages[{i}]: unknown stage {name!r}; known: {sorted(STAGES)}")
            continue
        try:
            STAGES[name].Params.model_validate(params or {})
        except ValidationError as error:
            problems += _describe(error, prefix=f"stages[{i}].{name}.")
    names = [next(iter(e)) if isinstance(e, dict) and len(e) == 1 else None for e in stages]
    for i, name in enumerate(names):
        info = STAGE_INFO.get(name) if isinstance(name, str) else None
        for j, earlier in enumerate(names[:i]):
            if info is not None and earlier in info.before:
                problems.append(f"stages[{i}].{name}: must come before {earlier} "
                                f"(stages[{j}]); move it up")
    return problems


def _check_references(manifest: Manifest) -> list[str]:
    problems = []
    names = [s.name for s in manifest.sources]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"sources: name {name!r} is used more than once")
    for i, entry in enumerate(manifest.stages):
        for stage_name, params in entry.items():
            for source in (params or {}).get("sources") or []:
                if source not in names:
                    problems.append(f"stages[{i}].{stage_name}.sources: no source named "
                                    f"{source!r} (sources are {names})")
    missing = code_detector.available() if manifest.detects_code_language else None
    if missing:
        code = [s.name for s in manifest.sources if s.kind == "code" and s.lang is None]
        problems.append(f"sources {code}: {missing}")
    if manifest.train and not manifest.packs:
        problems.append("train: needs data to train on: add a mixture or output.megatron")
    if manifest.mixture:
        for key in manifest.mixture.weights:
            base = key.removesuffix("@repo").split(":", 1)[0]  # @repo: repository documents
            if base not in ("code", "text") and base not in names:
                problems.append(f"mixture.weights.{key}: not a kind (code, text) or a source "
                                f"name ({names})")
    return problems


_PLACEHOLDER = re.compile(r"\{(\w+)\}|\$\{(\w+)\}")


def placeholders(base_dir: Path) -> dict[str, str]:
    paths = sysconfig.get_paths()
    return {"stdlib": paths["stdlib"], "purelib": paths["purelib"],
            "platlib": paths["platlib"], "include": paths["include"],
            "manifest_dir": str(base_dir)}


def _expand_paths(raw: dict[str, Any], base_dir: Path, problems: list[str],
                  expansions: dict[str, str] | None = None) -> dict[str, Any]:
    """Expand placeholders and make relative local paths absolute, in the fields typed
    `LocalPath` (stages/paths.py): the manifest's and each named stage's parameters.

    `expansions` collects each placeholder used (and {manifest_dir} for a relative path)
    with its value."""
    known = placeholders(base_dir)
    used = expansions if expansions is not None else {}

    def expand(value: str, where: str) -> str:
        def sub(match: re.Match[str]) -> str:
            name, env = match.group(1), match.group(2)
            if env is not None:
                if env not in os.environ:
                    problems.append(f"{where}: environment variable ${{{env}}} is not set")
                used[match.group(0)] = os.environ.get(env, "")
                return os.environ.get(env, "")
            if name not in known:
                problems.append(f"{where}: unknown placeholder {{{name}}}; "
                                f"known: {sorted(known)}")
                return match.group(0)
            used[match.group(0)] = known[name]
            return known[name]

        value = _PLACEHOLDER.sub(sub, value)
        if "://" not in value and not os.path.isabs(value):
            used["{manifest_dir}"] = str(base_dir)
            value = str(base_dir / value)
        return value

    def stage(entry: Any, where: str) -> Any:
        # `stages:` is a list of {name: params}: the name says which model types them
        if not isinstance(entry, dict) or len(entry) != 1:
            return entry
        ((name, params),) = entry.items()
        if name not in STAGES:
            return entry
        return {name: resolve_paths(params, STAGES[name].Params, f"{where}.{name}", expand)}

    out = {}
    for key, value in raw.items():
        if key == "stages" and isinstance(value, list):
            out[key] = [stage(entry, f"stages[{i}]") for i, entry in enumerate(value)]
        else:
            out[key] = resolve_paths(value, Manifest.model_fields[key].annotation, str(key),
                                     expand) if key in Manifest.model_fields else value
    return out

