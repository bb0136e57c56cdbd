"""The manifest: one YAML file that says what to build, validated strictly.

Unknown keys, wrong types and missing fields are errors that name the key path
(`sources[2].reader.paths`) and what was expected. Parameters typed `LocalPath`
(stages/paths.py) may use placeholders for what every Python install has
({stdlib}, {purelib}, {platlib}, {include}), {manifest_dir}, and ${ENV_VARS};
relative local paths are relative to the manifest file.

The parts: `schema.py` (the models), `load.py` (the YAML file), `placeholders.py`,
`parse.py` (schema and checks in one pass), `checks.py` (across keys), `errors.py`.
"""

from .errors import ManifestError
from .load import MAX_MANIFEST_BYTES, MAX_YAML_NODES, load_manifest
from .parse import parse_manifest
from .placeholders import placeholders
from .schema import (
    MAX_SEED,
    MAX_TOTAL_TOKENS,
    Manifest,
    MegatronOutputSpec,
    MixtureSpec,
    OutputSpec,
    PositiveByteSize,
    ShardSpec,
    SourceSpec,
    StageSpec,
    Strict,
    TokenizerSpec,
    TrainSpec,
)

__all__ = [
    "MAX_MANIFEST_BYTES", "MAX_SEED", "MAX_TOTAL_TOKENS", "MAX_YAML_NODES", "Manifest",
    "ManifestError", "MegatronOutputSpec", "MixtureSpec", "OutputSpec", "PositiveByteSize",
    "ShardSpec", "SourceSpec", "StageSpec", "Strict", "TokenizerSpec", "TrainSpec",
    "load_manifest", "parse_manifest", "placeholders",
]
