"""The stages' part of the workbench, reached by name: what a stage says about its
decision on one document (`explain`) and where in the text its rule found what it acted
on (`locate`), the hooks stages/explain.py describes. pipeline/ names no stage: it asks
the registry for the class of each name the run's stats.json lists."""

from __future__ import annotations

from typing import Any

from ...stages.explain import Span, WorkFiles
from ...stages.registry import STAGE_INFO, LazyStages

__all__ = ["Span", "WorkFiles", "explain_lines", "locations"]

_CLASSES = LazyStages(STAGE_INFO)  # the implicit stages (tokenize, mix) too


def _hook(stage: str, name: str) -> Any:
    """The stage's `explain` or `locate` (stages/hooks.py, StageHooks); None for a name
    without a class (ingest: the readers)."""
    if stage not in _CLASSES:
        return None
    return getattr(_CLASSES[stage], name)


def explain_lines(stage: str, doc: dict[str, Any], entry: dict[str, Any],
                  work: WorkFiles) -> list[str]:
    hook = _hook(stage, "explain")
    return list(hook(doc, entry, work)) if hook is not None else []


def locations(stage: str, doc: dict[str, Any], entry: dict[str, Any]) -> list[Span]:
    hook = _hook(stage, "locate")
    return list(hook(doc, entry)) if hook is not None and doc.get("text") else []
