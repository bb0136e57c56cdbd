"""Every stage a manifest may name, by the name it is written with.

Stages are listed as "module:Class" and imported on first use: a stage module
pulls in its models' libraries (datatrove, numba, tree-sitter, ...), and a
manifest names only some stages, so importing all of them up front made every
`lemur-data` command start about a second slower.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module

from lemur_data.stages.base import DocumentStage, GlobalStage

StageClass = type[DocumentStage] | type[GlobalStage]

# name -> "module:Class" (module relative to lemur_data.stages); add a stage here.
STAGE_PATHS: dict[str, str] = {
    "syntax": "syntax:Syntax",
    "exact_dedup": "exact_dedup:ExactDedup",
    "langid": "langid:LangId",
    "quality": "quality:Quality",
    "minhash": "minhash:MinHash",
    "decontaminate": "decontaminate:Decontaminate",
    "pii": "pii:Pii",
}


class LazyStages(Mapping[str, StageClass]):
    """Stage classes by name; `in`, `len` and iteration import nothing."""

    def __init__(self, paths: dict[str, str]) -> None:
        self._paths = paths
        self._loaded: dict[str, StageClass] = {}

    def __getitem__(self, name: str) -> StageClass:
        if name not in self._loaded:
            module, _, attr = self._paths[name].partition(":")
            stage = getattr(import_module(f"lemur_data.stages.{module}"), attr)
            if stage.name != name:  # a typo in STAGE_PATHS would otherwise run another stage
                raise TypeError(f"{self._paths[name]} is stage {stage.name!r}, not {name!r}")
            self._loaded[name] = stage
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


STAGES: Mapping[str, StageClass] = LazyStages(STAGE_PATHS)


def stage_class(name: str) -> StageClass:
    try:
        return STAGES[name]
    except KeyError:
        known = ", ".join(sorted(STAGES))
        raise KeyError(f"unknown stage {name!r}; known stages: {known}") from None
