"""Every stage, by the name a manifest and stats.json use, and where its class lives.

This table is the one place a stage is named: the order of a run's implicit and usual
stages, and the class of each. Everything else about a stage (the line the dataset
card prints, its cost for `lemur-data plan`, its figures, card notes and profile) is a
hook of its class (stages/hooks.py), in the stage's own module. `ingest`, `tokenize`
and `mix` are implicit (the runner adds them); the others a manifest may list.

Classes are imported on first use: a stage module pulls in its models'
libraries (datatrove, numba, tree-sitter, ...), and a manifest names only some
stages, so importing all of them up front made every command a second slower.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import cast

from .base import DocumentStage, GlobalStage
from .hooks import StageHooks

StageClass = type[DocumentStage] | type[GlobalStage]


@dataclass(frozen=True)
class StageInfo:
    path: str
    """"module:Class", the module relative to lemur_data.stages (ingest's class holds
    only its hooks: ingest is the readers plus the checks in ingest.py)."""
    listed: bool = True
    """A manifest may name it under `stages:` (implicit stages are not listed)."""
    before: tuple[str, ...] = ()
    """Stages it must come before in a manifest (optout before dedup: an opted-out copy
    must never be the one dedup keeps)."""


# The order is the order of a run's implicit and usual stages.
STAGE_INFO: dict[str, StageInfo] = {
    "ingest": StageInfo("ingest:Ingest", listed=False),
    "notebooks": StageInfo("notebooks:Notebooks"),
    "optout": StageInfo("optout:OptOut", before=("exact_dedup", "minhash", "repo_context")),
    "licenses": StageInfo("licenses:Licenses"),
    "langid": StageInfo("langid:LangId"),
    "quality": StageInfo("quality.stage:Quality"),
    "syntax": StageInfo("syntax:Syntax"),
    "max_lines": StageInfo("max_lines:MaxLines"),
    "exact_dedup": StageInfo("exact_dedup:ExactDedup"),
    "minhash": StageInfo("minhash.stage:MinHash"),
    "repo_context": StageInfo("repo_context:RepoContext"),
    "decontaminate": StageInfo("decontaminate.stage:Decontaminate"),
    "pii": StageInfo("pii:Pii"),
    "tokenize": StageInfo("tokenize.stage:Tokenize", listed=False),
    "mix": StageInfo("mix.stage:MixAndPack", listed=False),
}


def _load(name: str, path: str) -> type[StageHooks]:
    module, _, attr = path.partition(":")
    stage = getattr(import_module(f"lemur_data.stages.{module}"), attr)
    if stage.name != name:  # a typo in STAGE_INFO would otherwise run another stage
        raise TypeError(f"{path} is stage {stage.name!r}, not {name!r}")
    return stage


def stage_hooks(name: str) -> type[StageHooks]:
    """The class of any stage of a run, implicit ones too, for its hooks."""
    if name in STAGES:
        return STAGES[name]
    return _load(name, STAGE_INFO[name].path)


def listed_hooks() -> list[type[StageHooks]]:
    """Every stage a manifest may list, in run order (imports them all: ~0.3 s)."""
    return [STAGES[name] for name in STAGES]


def is_global(name: str) -> bool:
    return issubclass(stage_hooks(name), GlobalStage)


class LazyStages(Mapping[str, StageClass]):
    """Stage classes by name; `in`, `len` and iteration import nothing."""

    def __init__(self, info: dict[str, StageInfo]) -> None:
        self._paths = {name: i.path for name, i in info.items()}
        self._loaded: dict[str, StageClass] = {}

    def __getitem__(self, name: str) -> StageClass:
        if name not in self._loaded:
            self._loaded[name] = cast("StageClass", _load(name, self._paths[name]))
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


STAGES: Mapping[str, StageClass] = LazyStages(
    {name: info for name, info in STAGE_INFO.items() if info.listed})
"""The stages a manifest may list."""


def stage_class(name: str) -> StageClass:
    try:
        return STAGES[name]
    except KeyError:
        known = ", ".join(sorted(STAGES))
        raise KeyError(f"unknown stage {name!r}; known stages: {known}") from None
