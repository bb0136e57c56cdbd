"""Remove documents that contain items of the benchmarks the model is scored on.

Code parts (HumanEval prompts and solutions, MBPP solutions) are matched as
whitespace-free substrings, as StarCoder did; question text (GSM8K, MMLU, BBH,
MBPP task descriptions) by word 13-gram overlap. A removed document's reason is
the benchmark (`decontaminate:humaneval`) and its detail the item and part that
matched (`humaneval:HumanEval/12 prompt`). See benchmarks.py for where
items come from (a `file:`, a package shipping the data, or the Hub).
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

from lemur_data.filters.decontaminate import BenchmarkMatcher, ItemPart
from lemur_data.stages.base import DocumentStage, ShardContext, StageParams, StageResult
from lemur_data.stages.decontaminate.benchmarks import BENCHMARKS, load_benchmark


class BenchmarkSource(BaseModel):
    """One benchmark and, optionally, where to read its items."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """humaneval, mbpp, gsm8k, mmlu or bbh."""
    file: str | None = None
    """A local/fsspec .jsonl[.gz], .json or .parquet of the items (Hub or original schema)."""
    hub: bool = True
    """Try the Hugging Face Hub when neither `file` nor a data package is available."""

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in BENCHMARKS:
            raise ValueError(f"unknown benchmark {name!r}; known: {sorted(BENCHMARKS)}")
        return name


class DecontaminateParams(StageParams):
    benchmarks: list[str | BenchmarkSource] = ["humaneval", "mbpp", "gsm8k", "mmlu"]
    """Benchmarks to remove, by name or as {name, file, hub}."""
    ngram: PositiveInt = 13
    """Word n-gram length for question text (lowercased \\w+ words)."""
    ngram_min_words: PositiveInt = 8
    """A text part shorter than `ngram` words counts as one gram if it has this many words."""
    ngram_min_fraction: float = Field(0.5, gt=0, le=1)
    """Share of a part's distinctive n-grams that must occur in a document to remove it."""
    ngram_max_items: PositiveInt = 10
    """An n-gram found in more items than this is boilerplate, not evidence."""
    substring_min_chars: PositiveInt = 50
    """Code parts shorter than this (whitespace removed) are not searched (`return x+1`)."""

    def benchmark_sources(self) -> list[BenchmarkSource]:
        return [BenchmarkSource(name=b) if isinstance(b, str) else b for b in self.benchmarks]

    @field_validator("benchmarks")
    @classmethod
    def _names(cls, benchmarks: list[str | BenchmarkSource]) -> list[str | BenchmarkSource]:
        names = [b if isinstance(b, str) else b.name for b in benchmarks]
        unknown = [n for n in names if n not in BENCHMARKS]
        if unknown:
            raise ValueError(f"unknown benchmark(s) {unknown}; known: {sorted(BENCHMARKS)}")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"benchmark(s) listed more than once: {repeated}")
        return benchmarks

    @model_validator(mode="after")
    def _offline_source(self) -> DecontaminateParams:
        # With the Hub off, a missing source is certain now: say so before any worker starts.
        for source in self.benchmark_sources():
            benchmark = BENCHMARKS[source.name]
            if source.hub or source.file:
                continue
            module = benchmark.package[0] if benchmark.package else None
            if module is None or importlib.util.find_spec(module) is None:
                raise ValueError(
                    f"benchmark {source.name!r} has no offline source: give its items as "
                    f"{{name: {source.name}, file: path/to/{source.name}.jsonl}}"
                    + (f" or install {benchmark.pip_name}" if benchmark.pip_name else ""))
        return self


class Decontaminate(DocumentStage[DecontaminateParams]):
    name = "decontaminate"
    Params = DecontaminateParams

    def setup(self) -> None:
        p = self.params
        parts: list[ItemPart] = []
        self.loaded: dict[str, Any] = {}
        for source in p.benchmark_sources():
            items, where = load_benchmark(source.name, source.file, source.hub)
            parts += items
            self.loaded[source.name] = {"parts": len(items), "from": where}
        self.matcher = BenchmarkMatcher(
            parts, n=p.ngram, min_words=p.ngram_min_words, min_fraction=p.ngram_min_fraction,
            max_items_per_gram=p.ngram_max_items, min_chars=p.substring_min_chars)

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        if not hasattr(self, "matcher"):
            self.setup()
        reasons: list[str | None] = []
        details: list[str | None] = []
        for text in docs.column("text").to_pylist():
            match = self.matcher.find(text)
            reasons.append(match.benchmark if match else None)
            details.append(match.label if match else None)
        return StageResult(docs, pa.array(reasons, pa.string()), pa.array(details, pa.string()))
