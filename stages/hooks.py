"""What a stage tells the rest of lemur-data about itself: the hooks of the stage contract.

Every stage class (`DocumentStage`, `GlobalStage`, stages/base.py) is a `StageHooks`,
so a stage's facts live in its own module: the line the dataset card prints, its
figures in stats.json, its notes and chapter in the card, its figures in the report,
its part of the output profile, its cost for `lemur-data plan`, and what `explain` and
`inspect` say about one of its decisions. The runner and the
publisher (pipeline/) call these hooks for every stage of a run and name none; every
hook has a default that adds nothing, so a stage overrides only what it has.

The hooks are classmethods: the publisher renders from stats.json alone, without the
stage's parameters or an instance (a stage's parameters are in its stats entry).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from .explain import Span, WorkFiles

StatsEntry = dict[str, Any]
"""A stage's entry in stats.json's `stages` (name, in/kept/removed, by_* counts, params,
and its own figures)."""

WORKER_BASE_MB = 900.0
"""Memory of a Ray worker with parsers and models loaded (tests/bench/bench_memory.py)."""


@dataclass(frozen=True)
class BarChart:
    """A stage's figure for the report and the card, as data: bars per category, one
    series beside the other; the publisher draws it (pipeline/publish/plots.py)."""

    name: str
    """File name (plots/<name>.svg) and figure id."""
    title: str
    """Short title (the figure's alt text)."""
    caption: str
    heading: str
    """The title drawn above the bars."""
    labels: list[str]
    """One per category (x axis). A chart of one category is not drawn: the report says
    its values in a sentence (pipeline/publish/plots.py `Note`)."""
    series: list[tuple[str, str, list[float]]]
    """(legend label, colour, one value per category)."""
    ylabel: str
    percent: bool = True
    """Values are shares: the axis and the bar labels show percentages."""


@dataclass(frozen=True)
class CostInput:
    """What `lemur-data plan` knows of a stage's input when it charges the stage."""

    bytes_by_kind: dict[str, int]
    """Input bytes of the sources in the stage's scope, by kind (code, text)."""
    docs: float
    """Documents in the stage's scope (bytes / an average document size)."""
    step_write_bytes: float
    """Bytes of the kept shards written after this stage (0 unless it ends a step)."""
    mixture_tokens: float | None = None
    """The mixture's target tokens, when the manifest has a mixture."""

    @property
    def input_bytes(self) -> int:
        return sum(self.bytes_by_kind.values())


@dataclass(frozen=True)
class Cost:
    core_hours: float
    disk_bytes: float
    memory_mb: float
    """Per worker: a worker's base memory plus what the stage holds."""


def human(n: float) -> str:
    """1234567 -> 1.2M: short labels for axes and bars."""
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}"


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    """A markdown table as the dataset card prints it (thousands separators; `|`, `<`, `>`
    and `&` escaped)."""

    def cell(v: Any) -> str:
        if isinstance(v, bool) or v is None:
            return str(v)
        if isinstance(v, int):
            return f"{v:,}"
        if isinstance(v, float):
            return f"{v:,.6g}"
        # Data values (a language, a licence, a path) are text: the Hub renders raw HTML
        # in markdown (`<!--` would hide the rest of the card), so <, > and & are escaped.
        return html.escape(str(v), quote=False).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


class StageHooks:
    """The facts every stage may declare; the defaults add nothing."""

    name: ClassVar[str]
    about: ClassVar[str] = ""
    """What the stage does, in one line (the dataset card's section of the stage)."""
    rate_mb_s: ClassVar[tuple[float, float]] = (5.0, 5.0)
    """Input MB/s per core on (code, text), measured by tests/bench/ on the 2-core
    reference machine (docs/benchmarks.md); `plan` charges the stage by it."""
    report_hidden: ClassVar[tuple[str, ...]] = ()
    """Keys of its stats entry the report's and card's figure tables leave out (shown
    in a chapter of their own instead)."""
    merge_reasons: ClassVar[tuple[str, ...]] = ()
    """Removal reasons that are merges, not losses: those rows' content lives on in
    documents the stage keeps (repo_context's `merged`). The report and the card show
    them as a merge (`merge_line`), and the waterfall does not draw them as removed."""
    profile_columns: ClassVar[tuple[str, ...]] = ()
    """Columns its `profile` reads from the output shards (besides text, kind, lang)."""

    @classmethod
    def stats_figures(cls, entry: StatsEntry) -> dict[str, Any]:
        """Figures derived from the stage's own counts and parameters, added to its
        stats entry (e.g. decontaminate's report per benchmark)."""
        return {}

    @classmethod
    def run_figures(cls, summary: dict[str, Any]) -> dict[str, Any]:
        """Top-level keys of stats.json from a global stage's summary (e.g. the mix's
        `mixture` and `megatron`)."""
        return {}

    @classmethod
    def merged_into(cls, entry: StatsEntry) -> int | None:
        """How many kept documents its merged rows went into, if the stage says."""
        return None

    @classmethod
    def merge_line(cls, entry: StatsEntry, previous: StatsEntry | None = None) -> str:
        """"N files into M documents, bytes conserved": the sentence report and card both
        print for a merging stage ("" for one that merged nothing). `previous`: the stage
        before, whose kept bytes are what went in."""
        merged = [entry["removed_by_reason"][r] for r in cls.merge_reasons
                  if r in entry.get("removed_by_reason", {})]
        if not merged:
            return ""
        absorbed = sum(c["docs"] for c in merged)
        into = cls.merged_into(entry)
        before = previous["kept"]["bytes"] if previous else entry["in"]["bytes"]
        joined = (f"{absorbed + into:,} documents into {into:,}" if into is not None
                  else f"{absorbed:,} documents into others")
        return (f"merged {joined}: {before:,} bytes in, {entry['kept']['bytes']:,} bytes "
                "kept (the merged content is in the kept documents, not removed)")

    @classmethod
    def card_notes(cls, entry: StatsEntry) -> list[str]:
        """Paragraphs of the stage's section of the card, after its parameters."""
        return []

    @classmethod
    def card_sources(cls, entry: StatsEntry) -> str:
        """A sentence the card's Sources section adds after the code-language note (a
        stage that labels code says what became of the files it could not place)."""
        return ""

    @classmethod
    def card_chapter(cls, entry: StatsEntry) -> tuple[str, str] | None:
        """A chapter of the card of its own, (title, markdown), after `Processing`."""
        return None

    @classmethod
    def card_limitations(cls, entry: StatsEntry | None) -> list[str]:
        """The card's limitations this stage adds; `entry` is None when the run did not
        have the stage (called for every stage a manifest may list)."""
        return []

    @classmethod
    def figures(cls, entry: StatsEntry, stats: dict[str, Any]) -> list[BarChart]:
        """The stage's figures for the report and the card (after the run's own)."""
        return []

    @classmethod
    def profile(cls, docs: pa.Table) -> dict[str, Any]:
        """Its part of one output shard's profile: {key: nested counts} that add up over
        shards (stats.json's `profile.<key>`); {} when the shard lacks its columns.
        `lang` is already "unknown" where it was missing."""
        return {}

    @classmethod
    def explain(cls, doc: dict[str, Any], entry: StatsEntry, work: WorkFiles) -> list[str]:
        """`lemur-data explain`: a few lines on what the stage decided about one document
        and why, from the run folder alone (stages/explain.py). `doc`: the document as
        the stage left it; `entry`: its stats entry (`given`: its parameters as the
        manifest wrote them); `work`: its work folder, for a global stage."""
        return []

    @classmethod
    def locate(cls, doc: dict[str, Any], entry: StatsEntry) -> list[Span]:
        """`inspect` / the report's examples: where in `doc["text"]` the stage's rule
        found what it acted on (a syntax error, a redaction), to mark it."""
        return []

    @classmethod
    def cost(cls, params: Any, size: CostInput) -> Cost:
        """Core-hours, disk and worker memory of the stage on `size` (`params`: its
        manifest parameters, None for an implicit stage)."""
        rates: dict[str, float] = dict(zip(("code", "text"), cls.rate_mb_s, strict=True))
        core_hours = sum(n / 1e6 / rates[kind] / 3600 for kind, n in size.bytes_by_kind.items())
        return Cost(core_hours, size.step_write_bytes, WORKER_BASE_MB)
