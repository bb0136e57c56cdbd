"""A manifest's parsed YAML made a `Manifest`: paths expanded, the schema applied, then
the checks across its keys; every problem reported in one pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .checks import check_references, check_resolvable, check_stages, non_finite
from .errors import ManifestError, describe
from .placeholders import expand_paths
from .schema import Manifest


def parse_manifest(raw: dict[str, Any], where: str = "<manifest>",
                   base_dir: Path | None = None) -> Manifest:
    base_dir = base_dir or Path.cwd()
    problems: list[str] = []
    expansions: dict[str, str] = {}
    raw = expand_paths(raw, base_dir, problems, expansions)
    problems += non_finite(raw)
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as error:
        # the stages' own parameters too, so every error shows in one pass
        stages = raw.get("stages")
        stages = stages if isinstance(stages, list) else []
        raise ManifestError(where, problems + describe(error) + check_stages(stages)) from None
    problems += check_stages(manifest.stages) + check_references(manifest) \
        + check_resolvable(manifest)
    if problems:
        raise ManifestError(where, problems)
    manifest._expansions.update(expansions)
    return manifest
