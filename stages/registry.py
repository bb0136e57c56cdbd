"""Every stage a manifest may name, by the name it is written with."""

from __future__ import annotations

from lemur_data.stages.base import DocumentStage, GlobalStage
from lemur_data.stages.decontaminate import Decontaminate
from lemur_data.stages.exact_dedup import ExactDedup
from lemur_data.stages.langid import LangId
from lemur_data.stages.minhash import MinHash
from lemur_data.stages.pii import Pii
from lemur_data.stages.quality import Quality
from lemur_data.stages.syntax import Syntax

STAGES: dict[str, type[DocumentStage] | type[GlobalStage]] = {
    stage.name: stage
    for stage in [
        Syntax,
        ExactDedup,
        LangId,
        Quality,
        MinHash,
        Decontaminate,
        Pii,
    ]
}


def stage_class(name: str) -> type[DocumentStage] | type[GlobalStage]:
    try:
        return STAGES[name]
    except KeyError:
        known = ", ".join(sorted(STAGES))
        raise KeyError(f"unknown stage {name!r}; known stages: {known}") from None
