"""pyproject.toml's dependency bounds agree with each other and with what is installed."""

from __future__ import annotations

import importlib.metadata as metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib

PROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())[
    "project"]
CORE = {canonicalize_name(r.name): r for r in map(Requirement, PROJECT["dependencies"])}


def _lower(requirement: Requirement) -> Version | None:
    bounds = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==", "~=")]
    return max(bounds) if bounds else None


def test_extras_repeat_core_dependencies_with_the_same_bounds() -> None:
    clashes = [f"[{extra}] {r} vs core {CORE[canonicalize_name(r.name)]}"
               for extra, requirements in PROJECT["optional-dependencies"].items()
               for r in map(Requirement, requirements)
               if canonicalize_name(r.name) in CORE
               and r.specifier != CORE[canonicalize_name(r.name)].specifier]
    assert clashes == []


def test_installed_core_dependencies_meet_the_bounds() -> None:
    outside = [f"{name} {metadata.version(name)} vs {r}" for name, r in CORE.items()
               if not r.specifier.contains(metadata.version(name), prereleases=True)]
    assert outside == []


def test_huggingface_hub_bound_is_what_datatrove_needs() -> None:
    ours = CORE["huggingface-hub"]
    needed = [Requirement(r) for r in metadata.requires("datatrove") or []]
    (theirs,) = [r for r in needed if canonicalize_name(r.name) == "huggingface-hub"
                 and (r.marker is None or r.marker.evaluate({"extra": ""}))]
    assert _lower(ours) is not None and _lower(theirs) is not None
    assert _lower(ours) >= _lower(theirs), (str(ours), str(theirs))
