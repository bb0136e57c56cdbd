"""What a stage is: the contract between the runner (pipeline/) and the stages.

Two kinds of stage exist:

- `DocumentStage`: decides per document. The runner fuses consecutive
  document stages into one Ray task per shard (read once, apply all, write once).
  A stage only scores and decides; the runner does the accounting, so every
  stage keeps `in = kept + removed` by construction.
- `GlobalStage`: needs to see the whole corpus first (dedup, mixing). It
  declares explicit phases of independent tasks, and then a `DocumentStage`
  that applies the decisions per shard.

Both are `StageHooks` (stages/hooks.py): what a stage says about itself to the runner,
the publisher and `plan` (its card line, stats figures, card notes, figures, profile and
cost) lives with the stage; pipeline/ calls the hooks and names no stage.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ByteSize, ConfigDict, PositiveFloat

from .hooks import StageHooks


class Resources(BaseModel):
    """What one task of a stage asks Ray for (scheduling, as Ray's num_cpus/memory)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpus: PositiveFloat = 1.0
    memory: ByteSize | None = None
    """Memory to reserve per task, e.g. 4GB; Ray places tasks only where it fits."""


class StageParams(BaseModel):
    """Parameters every stage accepts in the manifest, besides its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    resources: Resources = Resources()
    """CPUs and memory per task of this stage; a fused step takes the largest."""
    sources: list[str] | None = None
    """Apply only to documents of these sources (default: all)."""
    kinds: list[Literal["code", "text"]] | None = None
    """Apply only to documents of these kinds (default: all)."""


P = TypeVar("P", bound=StageParams)
"""A stage's own parameter model; `self.params` has that type."""


def in_scope(table: pa.Table, params: StageParams) -> pa.Array:
    """Rows a stage applies to: those its `sources`/`kinds` select (all by default).

    A global stage must hash only these: a copy outside the scope is never removed
    by the applier, so it must not be chosen as the copy that survives either.
    """
    mask: pa.Array | pa.ChunkedArray = pa.array([True] * table.num_rows, pa.bool_())
    if params.sources is not None:
        mask = pc.and_(mask, pc.is_in(table.column("source"), pa.array(params.sources)))
    if params.kinds is not None:
        mask = pc.and_(mask, pc.is_in(table.column("kind"), pa.array(params.kinds)))
    return mask.combine_chunks() if isinstance(mask, pa.ChunkedArray) else mask


def sources_in_scope(sources: Sequence[str] | None, kinds: Sequence[str] | None,
                     kind_of: dict[str, str]) -> list[str]:
    """The sources (of `kind_of`: source name -> kind, in manifest order) a stage with
    these `sources`/`kinds` applies to: `in_scope` for whole sources, where there are
    counts or sizes per source but no documents (`plan`'s cost, the dataset card)."""
    return [name for name, kind in kind_of.items()
            if (sources is None or name in sources) and (kinds is None or kind in kinds)]


@dataclass(frozen=True)
class ShardContext:
    """Where a shard sits in a run; lets a stage find its global decisions."""

    shard_id: str
    run_dir: str
    seed: int
    work_dir: str = ""
    earlier: tuple[str, ...] = ()
    """This shard's outputs of earlier `read: needed` rounds that hold the columns a stage
    of this step adds, newest first (files that may not exist: a round may not have read
    the shard). A stage may take its values from there for a document of the same id and
    text instead of computing them again (tokenize does)."""


@dataclass
class StageResult:
    """A stage's verdict on a table of documents.

    `table` holds the same rows in the same order, possibly with columns added
    (scores, metrics). `reasons` holds one rule name per row, or null to keep.
    `details` optionally explains a removal (the matched benchmark item, an error).
    """

    table: pa.Table
    reasons: pa.Array
    details: pa.Array | None = None

    @classmethod
    def keep_all(cls, table: pa.Table) -> StageResult:
        return cls(table, pa.nulls(table.num_rows, pa.string()))

    @classmethod
    def from_decisions(cls, table: pa.Table, drops: pa.Table,
                       explain: Callable[[dict[str, Any]], tuple[str, str]]) -> StageResult:
        """Remove what a global stage decided: `drops` has an `id` column, one row per
        document to remove; `explain(row)` gives that document's (rule, detail)."""
        decided = {row["id"]: row for row in drops.to_pylist()}
        reasons: list[str | None] = []
        details: list[str | None] = []
        for doc_id in table.column("id").to_pylist():
            row = decided.get(doc_id)
            reason, detail = explain(row) if row is not None else (None, None)
            reasons.append(reason)
            details.append(detail)
        return cls(table, pa.array(reasons, pa.string()), pa.array(details, pa.string()))


class DocumentStage(StageHooks, ABC, Generic[P]):
    """A per-document stage. Instances are built once per worker and reused."""

    name: ClassVar[str]
    Params: ClassVar[type[StageParams]] = StageParams
    """The class manifest parameters are validated with (the stage's `P`)."""
    count_columns: ClassVar[tuple[str, ...]] = ()
    """Added columns that stats also count by (e.g. syntax_checked: checked or not)."""
    total_columns: ClassVar[tuple[str, ...]] = ()
    """Added integer columns stats sums under the stage's `totals` (e.g. pii_emails)."""
    count_details: ClassVar[bool] = False
    """Removed documents are also counted by their detail (decontaminate: the benchmark
    item), so stats.json can say how many documents each item removed."""

    def __init__(self, params: P) -> None:
        self.params: P = params

    def setup(self) -> None:  # noqa: B027 - optional hook
        """Load models or parsers. Called once per worker before the first shard."""

    @abstractmethod
    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        """Score `docs` and say which to remove and why."""

    def cache_key(self) -> str:
        """Workers reuse one built instance per distinct key (models load once). The
        key holds the size and mtime of each local file or folder the parameters name:
        a worker that outlives a build (a resident driver's, pipeline/resident) builds
        the stage again when a file it loads has changed, as a new worker would."""
        params = self.key_params()
        return f"{type(self).__qualname__}:{params}:{file_stamps(json.loads(params))}"

    def key_params(self) -> str:
        """The parameters as `cache_key` tells instances apart (JSON)."""
        return self.params.model_dump_json()

    def added_columns(self) -> list[pa.Field]:
        """Columns this stage adds, so documents it does not see get nulls."""
        return []

    def summary(self) -> dict[str, Any]:
        """Figures for stats.json beside the counts (the card's figure table), computed
        in the driver once the run's shards are done: e.g. which list `optout` used."""
        return {}

    def run_facts(self) -> dict[str, Any]:
        """How the built instance works, for the stage's entry in stats.json (the same
        on every worker, e.g. which encoder tokenized); {} for most stages."""
        return {}


class DecisionsApplier(DocumentStage[P]):
    """The document step of a global stage: applies the decisions its phases wrote to
    `decisions_dir`. The folder is part of the cache key, so a worker keeps one
    instance per run and step."""

    def __init__(self, params: P, decisions_dir: str) -> None:
        super().__init__(params)
        self.decisions_dir = decisions_dir

    def cache_key(self) -> str:
        return f"{super().cache_key()}:{self.decisions_dir}"


def file_stamps(value: Any) -> str:
    """`path=size:mtime_ns` of each string in `value` (nested dicts and lists) that names
    an existing local file or folder; URLs are left out (a stat would be a request)."""
    found: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            for child in item.values():
                walk(child)
        elif isinstance(item, list):
            for child in item:
                walk(child)
        elif isinstance(item, str) and os.sep in item and "://" not in item \
                and len(item) < 4096:
            try:
                info = os.stat(item)
            except (OSError, ValueError):
                return
            found.append(f"{item}={info.st_size}:{info.st_mtime_ns}")

    walk(value)
    return ";".join(found)


@dataclass(frozen=True)
class Task:
    """One unit of work in a phase: picklable, deterministic, writes its own outputs.

    `run()` returns a small JSON-able summary; the runner stores it beside the
    task's completion marker so that a resumed run reads it back unchanged.
    """

    key: str
    run: Callable[[], dict[str, Any]]
    outputs: tuple[str, ...] = ()
    """Files the task writes; a task counts as done only if its marker and these exist."""


@dataclass(frozen=True)
class Phase:
    """Tasks that may run in any order and in parallel; phases run in sequence."""

    name: str
    tasks: list[Task] = field(default_factory=list)
    resources: Resources | None = None
    """Set by the planner from the stages' parameters."""


@dataclass(frozen=True)
class GlobalContext:
    """What a global stage needs to plan its phases."""

    run_dir: str
    work_dir: str
    input_shards: dict[str, str]  # shard id -> parquet path of the documents it reads
    seed: int


@dataclass(frozen=True)
class IndexSource:
    """What a dedup stage's `export_index` reads: its step as the run planned it, and the
    run's kept documents (stages/dedup_index/)."""

    ctx: GlobalContext
    kept: pa.Array
    """The ids of the run's kept documents (its final output), sorted."""
    removed: dict[str, str]
    """id -> kept_id of the duplicates the run's dedup stages removed in favour of its own
    documents (every stage's `index_removed`)."""


@dataclass(frozen=True)
class IndexReads:
    """What deduplicating against one indexed run reads of its index (`plan`)."""

    run: str
    docs: int
    bytes_read: int
    """Read in full, once per run (the exact hashes, or the MinHash band buckets)."""
    bytes_candidates: int
    """Read only in part, by row groups holding candidates (an upper bound: all)."""


class GlobalStage(StageHooks, ABC, Generic[P]):
    """A stage that must see every shard before deciding (dedup, mixing)."""

    name: ClassVar[str]
    Params: ClassVar[type[StageParams]] = StageParams
    index_section: ClassVar[str | None] = None
    """Its section of a run's dedup index (`lemur-data index`, `index: true`), if the
    stage writes one; then it implements `export_index` and `index_removed`."""
    index_format: ClassVar[int] = 1
    """The version of its section's files: bumped when their schema or layout changes, so
    an index written before is rebuilt (`lemur-data index`) and refused until then."""

    def __init__(self, params: P) -> None:
        self.params: P = params

    @abstractmethod
    def phases(self, ctx: GlobalContext) -> list[Phase]:
        """The phases that compute the decisions, in order."""

    @abstractmethod
    def applier(self, ctx: GlobalContext) -> DocumentStage:
        """The per-document stage that applies the decisions to each shard."""

    def summary(self, ctx: GlobalContext) -> dict[str, Any]:
        """Figures for stats.json (parameters, cluster sizes, ...)."""
        return {}

    def index_removed(self, ctx: GlobalContext) -> dict[str, str]:
        """id -> kept_id of the documents it removed in favour of this run's own (not of
        an indexed run's), from its finished work files."""
        return {}

    def export_index(self, source: IndexSource) -> dict[str, Any]:
        """Write its section of the run's index from its work files; return the section
        of index.json (its parameters a later run must match, its document counts)."""
        raise NotImplementedError(f"{self.name} writes no dedup index")

    def index_reads(self) -> list[IndexReads]:
        """What it reads of each `against` run's index (`lemur-data plan`)."""
        return []
