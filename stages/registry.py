"""Every stage, by the name a manifest and stats.json use, with the facts about it.

This table is the one place a stage is described: where its class lives, the
one-line description the dataset card prints, whether it sees the whole corpus,
and the per-core rate `lemur-data plan` charges for it. `ingest`, `tokenize`
and `mix` are implicit (the runner adds them); the others a manifest may list.

Classes are imported on first use: a stage module pulls in its models'
libraries (datatrove, numba, tree-sitter, ...), and a manifest names only some
stages, so importing all of them up front made every command a second slower.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module

from .base import DocumentStage, GlobalStage

StageClass = type[DocumentStage] | type[GlobalStage]


@dataclass(frozen=True)
class StageInfo:
    path: str | None
    """"module:Class", the module relative to lemur_data.stages (None: no class;
    ingest is the readers plus the checks in ingest.py)."""
    about: str
    """What the stage does, in one line (the dataset card's stage list)."""
    rate_mb_s: tuple[float, float]
    """Input MB/s per core on (code, text), measured by tests/bench/ on the 2-core
    reference machine (2026-11-30; docs/benchmarks.md). A stage that skips a kind
    costs ~nothing there."""
    is_global: bool = False
    """Sees every shard before deciding (its own phases, then an applier step)."""
    listed: bool = True
    """A manifest may name it under `stages:` (implicit stages are not listed)."""
    before: tuple[str, ...] = ()
    """Stages it must come before in a manifest (optout before dedup: an opted-out copy
    must never be the one dedup keeps)."""


# The order is the order of a run's implicit and usual stages.
STAGE_INFO: dict[str, StageInfo] = {
    "ingest": StageInfo(
        None, "reads every source; removes empty, undecodable and over-large "
        "documents", (40.0, 40.0), listed=False),
    "notebooks": StageInfo(
        "notebooks:Notebooks", "Jupyter notebooks as scripts of their language (jupytext) or "
        "StarCoder2's structured text; outputs and images dropped", (6.0, 1000.0)),
    # optout: ~7,500 MB/s measured on 3,000 stdlib files against a 100k-entry list
    # (2026-12-01), charged at 1,000 like the other set look-ups.
    "optout": StageInfo(
        "optout:OptOut", "drops documents whose repository or owner asked to be left out "
        "(The Stack's opt-out list)", (1000.0, 1000.0),
        before=("exact_dedup", "minhash", "repo_context")),
    "licenses": StageInfo(
        "licenses:Licenses", "keeps documents by licence: an SPDX allow-list (or `permissive`) "
        "or a deny-list", (1000.0, 1000.0)),
    "langid": StageInfo(
        "langid:LangId", "language identification (fastText lid.176 for text, file-type "
        "table for code)", (500.0, 6.2)),
    "quality": StageInfo(
        "quality:Quality", "heuristic quality rules (The Stack / StarCoder for code; Gopher, "
        "C4, FineWeb for text)", (35.0, 0.8)),
    "syntax": StageInfo(
        "syntax:Syntax", "tree-sitter parse; removes files whose share of bytes under "
        "ERROR/MISSING nodes is over the language's threshold", (1.9, 1000.0)),
    "exact_dedup": StageInfo(
        "exact_dedup:ExactDedup", "exact deduplication: one copy of each distinct text "
        "survives", (60.0, 60.0), is_global=True),
    "minhash": StageInfo(
        "minhash.stage:MinHash", "MinHash LSH near-deduplication: one document per cluster "
        "survives", (20.0, 20.0), is_global=True),
    "repo_context": StageInfo(
        "repo_context:RepoContext", "joins each repository's kept files into repository "
        "documents (dependency order, StarCoder2 format)", (20.0, 20.0), is_global=True),
    "decontaminate": StageInfo(
        "decontaminate.stage:Decontaminate", "removes documents overlapping evaluation "
        "benchmarks", (4.5, 4.5)),
    "pii": StageInfo(
        "pii:Pii", "personal data (emails, keys, IPs) redaction or removal", (15.0, 15.0)),
    # tokenize: fastokens, 33 MB/s on stdlib code and 27 on help() prose per core
    # (2026-12-01, load average 11-23 on the shared machine; was 3.0 with sentencepiece):
    # `python -m tests.bench.bench_tokenize 8`, charged a little under.
    "tokenize": StageInfo(
        "tokenize.stage:Tokenize", "token ids per document, EOS after each (removes nothing)",
        (30.0, 25.0), listed=False),
    "mix": StageInfo(
        "mix.stage:MixAndPack", "mixes components at the target token shares and packs Megatron "
        ".bin/.idx shards", (50.0, 50.0), is_global=True, listed=False),
}


class LazyStages(Mapping[str, StageClass]):
    """Stage classes by name; `in`, `len` and iteration import nothing."""

    def __init__(self, info: dict[str, StageInfo]) -> None:
        self._paths = {name: i.path for name, i in info.items() if i.path}
        self._loaded: dict[str, StageClass] = {}

    def __getitem__(self, name: str) -> StageClass:
        if name not in self._loaded:
            module, _, attr = self._paths[name].partition(":")
            stage = getattr(import_module(f"lemur_data.stages.{module}"), attr)
            if stage.name != name:  # a typo in STAGE_INFO would otherwise run another stage
                raise TypeError(f"{self._paths[name]} is stage {stage.name!r}, not {name!r}")
            self._loaded[name] = stage
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
