"""Placeholders ({stdlib}, {manifest_dir}, ${ENV}) expanded and relative local paths made
absolute, in the fields typed `LocalPath` (stages/paths.py)."""

from __future__ import annotations

import os
import re
import sysconfig
from pathlib import Path
from typing import Any

from ...stages.paths import resolve_paths
from ...stages.registry import STAGES
from .schema import Manifest

_PLACEHOLDER = re.compile(r"\{(\w+)\}|\$\{(\w+)\}")


def placeholders(base_dir: Path) -> dict[str, str]:
    paths = sysconfig.get_paths()
    return {"stdlib": paths["stdlib"], "purelib": paths["purelib"],
            "platlib": paths["platlib"], "include": paths["include"],
            "manifest_dir": str(base_dir)}


def expand_paths(raw: dict[str, Any], base_dir: Path, problems: list[str],
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
