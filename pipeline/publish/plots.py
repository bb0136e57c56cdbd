"""The run's figures as PNG bytes, drawn from stats.json (matplotlib, Agg, no pyplot).

Each function returns None when the run has nothing to show (no mixture, no
MinHash stage, ...), and a `Note` when a bar chart would hold one category (one
mixture component, one language): a sentence says what the one bar would, since a
figure costs ~0.05-0.1 CPU s of matplotlib's text layout and a small build draws
while the user waits. PNGs carry no timestamp, so the same stats give the same
bytes and a resumed run's report stays byte-identical.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch
from matplotlib.ticker import NullLocator

from ...stages.hooks import BarChart, human
from ...stages.registry import STAGE_INFO, stage_hooks

KIND_COLORS = {"code": "#1f77b4", "text": "#ff7f0e"}
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"]
MOST_REASONS = 11  # the rest are drawn as one grey "other reasons" segment
MOST_LANGS = 20


@dataclass(frozen=True)
class Plot:
    name: str
    title: str
    caption: str
    png: bytes


@dataclass(frozen=True)
class Note:
    """A figure that would show one category, said in a sentence (the report prints it
    where the figure would be; no plots/ file)."""

    name: str
    title: str
    text: str


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def _text_size(labels: list[str], points: float) -> tuple[float, float]:
    """The widest line and the most lines' height of `labels` at `points`, in inches,
    as Agg lays them out (at the PNGs' 100 dpi)."""
    renderer = RendererAgg(1, 1, 100)
    font = FontProperties(size=points)
    width = max((renderer.get_text_width_height_descent(line, font, ismath=False)[0]
                 for label in labels for line in label.split("\n")), default=0.0) / 100
    lines = max((len(label.split("\n")) for label in labels), default=0)
    return width, lines * points * 1.2 / 72  # matplotlib's line spacing: 1.2


def _fixed(panels: int, height: float, top: float, bottom: float, head: float = 0.0,
           foot: float = 0.0, left: float = 0.85, right: float = 0.2,
           ) -> tuple[Figure, list[Any]]:
    """A 10-inch-wide figure of panels stacked at fixed margins, in inches: `top` and
    `bottom` inside each panel of `height`, `head` above them all, `foot` below.

    No layout engine: the constrained layout measured every tick label twice before
    the figure was drawn, a third of the figure's time. So each figure sets margins
    that hold its text: text of a known bound (numbers as `human` writes them, stage
    names), or free labels (languages, mixture keys) measured first (`_text_size`)."""
    total = head + panels * height + foot
    fig = Figure(figsize=(10, total))
    axes = []
    for i in range(panels):
        upper = head + i * height + top  # inches from the figure's top
        lower = head + (i + 1) * height - bottom
        axes.append(fig.add_axes((left / 10, 1 - lower / total, 1 - (left + right) / 10,
                                  (lower - upper) / total)))
    return fig, axes


@dataclass(frozen=True)
class WaterfallStep:
    """One stage of the waterfall, in documents or bytes: the level it starts at (what
    the stage before kept), what it removed by reason, what it merged, and its kept."""

    name: str
    start: int
    removed: dict[str, int]
    merged: int
    end: int


def waterfall_steps(stats: dict[str, Any], unit: str) -> list[WaterfallStep]:
    """The waterfall's figures, from stats.json alone: each level is a stage's own
    `kept`, so the output bar is stats.json's output, as the card says; a merging
    stage (StageHooks.merge_reasons) moves the level by what it merged, not as removed."""
    steps = []
    stages = stats.get("stages") or []
    level = stages[0]["in"][unit] if stages else 0
    for stage in stages:
        merging = stage_hooks(stage["name"]).merge_reasons if stage["name"] in STAGE_INFO \
            else ()
        removed = {r: c[unit] for r, c in stage["removed_by_reason"].items()
                   if r not in merging}
        merged = sum(c[unit] for r, c in stage["removed_by_reason"].items() if r in merging)
        steps.append(WaterfallStep(stage["name"], level, removed, merged, stage["kept"][unit]))
        level = stage["kept"][unit]
    return steps


def waterfall(stats: dict[str, Any]) -> Plot | None:
    """Input, what each stage removed (split by reason) or merged, output: in documents
    and bytes."""
    stages = stats.get("stages") or []
    if not stages:
        return None
    totals: dict[str, int] = {}
    for step in waterfall_steps(stats, "docs"):
        for reason, docs in step.removed.items():
            totals[reason] = totals.get(reason, 0) + docs
    ranked = sorted(totals, key=lambda r: (-totals[r], r))
    shown = ranked[:MOST_REASONS]
    color = {r: PALETTE[i % len(PALETTE)] for i, r in enumerate(shown)}
    handles = [Patch(color=color[r], label=r) for r in shown]
    if len(ranked) > len(shown):
        handles.append(Patch(color="#cccccc", label=f"{len(ranked) - len(shown)} other reasons"))
    if any(step.merged for step in waterfall_steps(stats, "docs")):
        handles.append(Patch(facecolor="#ffffff", edgecolor="#555555", hatch="//",
                             label="merged (kept inside other documents)"))
    # Columns as many as the longest label lets fit in the figure's 10 inches (at 7 pt a
    # character is ~0.06 in, the patch and gap ~0.5 in): four columns of reasons like
    # `quality:gopher_quality/gopher_below_alpha_threshold` were cut at both edges.
    longest = max((len(str(h.get_label())) for h in handles), default=0)
    ncols = max(1, min(4, int(9.5 / (0.06 * longest + 0.5))))
    rows = -(-len(handles) // ncols)
    # below the panels: the legend's rows at 7 pt (~0.14 in each) and its frame; the
    # stage names under each panel, rotated 20 degrees, take ~0.45 in
    fig, axes = _fixed(2, 3.8, top=0.1, bottom=0.6, head=0.45,
                       foot=0.14 * rows + 0.2 if handles else 0.1)
    labels = ["input", *[s["name"] for s in stages], "output"]
    for ax, unit in zip(axes, ("docs", "bytes"), strict=True):
        steps = waterfall_steps(stats, unit)
        ax.bar(0, steps[0].start, color="#777777")
        ax.text(0, steps[0].start, human(steps[0].start), ha="center", va="bottom", fontsize=8)
        for x, step in enumerate(steps, start=1):
            top = step.start
            for reason, size in sorted(step.removed.items(),
                                       key=lambda kv: (kv[0] not in color, kv[0])):
                if size <= 0:
                    continue
                ax.bar(x, size, bottom=top - size, color=color.get(reason, "#cccccc"))
                top -= size
            if step.merged:  # merged rows live on in the kept documents: a hatched step
                ax.bar(x, step.end, color="#ffffff", edgecolor="#555555", hatch="//",
                       linewidth=0.5)
            ax.plot([x - 0.4, x + 0.4], [step.start, step.start], color="#333333",
                    linewidth=0.8)
            lost = sum(step.removed.values())
            text = f"-{human(lost)}" if lost else "0"
            if step.merged:
                text = f"{text}\nmerged"
            ax.text(x, max(step.start, step.end), text, ha="center", va="bottom", fontsize=8)
        level = steps[-1].end
        ax.bar(len(labels) - 1, level, color="#2ca02c")
        ax.text(len(labels) - 1, level, human(level), ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("documents" if unit == "docs" else "bytes")
        ax.yaxis.set_major_formatter(lambda v, _: human(v))
        ax.margins(y=0.12)
    fig.suptitle("What each stage removed (bars split by reason)", y=1 - 0.1 / fig.get_figheight(),
                 va="top")
    if handles:
        fig.legend(handles=handles, fontsize=7, loc="lower center", ncols=ncols)
    return Plot("waterfall", "Removed per stage",
                "Documents (top) and bytes (bottom): the input, what each stage removed "
                "(coloured by reason) or merged into documents it kept (hatched: not lost), "
                "and the output; each level is the stage's kept count in stats.json.",
                _png(fig))


def mixture(stats: dict[str, Any]) -> Plot | Note | None:
    """Target vs realized share of each mixture component, with the tokens used."""
    mix = stats.get("mixture")
    if not mix or not mix.get("components"):
        return None
    components = mix["components"]
    if len(components) == 1:
        (one,) = components
        return Note("mixture", "Token mix by component",
                    f"One mixture component, {one['key']}: {human(one['used_tokens'])} "
                    f"tokens used, {one.get('realized_epochs', 0):.2f} epochs over its "
                    f"available tokens (the Mixture table below).")
    keys = [c["key"] for c in components]
    # The keys, 10 pt, rotated 20 degrees and ending at their tick: below the axes
    # their height, and left of it what the first one reaches past its tick (the x
    # range is set to put the first tick 0.6 of a bar slot in).
    width, height = _text_size(keys, 10)
    slant, rise = math.cos(math.radians(20)), math.sin(math.radians(20))
    first = _text_size(keys[:1], 10)[0] * slant
    left = max(0.85, first + 0.15 - 8.9 * 0.6 / len(keys))
    fig, (ax,) = _fixed(1, 4.2, top=0.4, bottom=width * rise + height * slant + 0.2,
                        left=left)
    ax.set_xlim(-0.6, len(keys) - 0.4)
    xs = range(len(components))
    target = [c.get("target_share", 0.0) for c in components]
    real = [c.get("realized_share", 0.0) for c in components]
    ax.bar([x - 0.2 for x in xs], target, width=0.4, label="target", color="#bbbbbb")
    bars = ax.bar([x + 0.2 for x in xs], real, width=0.4, label="realized", color="#1f77b4")
    for bar, component in zip(bars, components, strict=True):
        epochs = component.get("realized_epochs", 0)
        ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height(),
                f"{human(component['used_tokens'])} tok\n{epochs:.2f} ep",
                ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(xs), keys, rotation=20, ha="right")
    ax.set_ylabel("share of tokens")
    ax.set_ylim(0, max([*target, *real, 0.01]) * 1.25)
    ax.legend()
    ax.set_title(f"Token mix: {human(mix.get('used_tokens', 0))} tokens, worst relative share "
                 f"error {mix.get('max_share_error', 0):.2e}")
    return Plot("mixture", "Token mix by component",
                "Target vs realized share of tokens per mixture component; labels give the "
                "tokens used and the epochs over the component's available tokens.", _png(fig))


def tokens_by_language(stats: dict[str, Any]) -> Plot | Note | None:
    """Tokens of the output documents per language, coloured by kind."""
    profile = stats.get("profile") or {}
    by_lang = profile.get("tokens_by_lang")
    if not by_lang:
        return None
    if len(by_lang) == 1:
        ((lang, tokens),) = by_lang.items()
        return Note("tokens_by_language", "Tokens by language",
                    f"All {human(tokens)} tokens of the kept documents are {lang}.")
    kind_of = {lang: kind for kind, langs in (profile.get("docs_by_kind_lang") or {}).items()
               for lang in langs}
    ranked = sorted(by_lang.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ranked[:MOST_LANGS]
    if len(ranked) > len(shown):
        shown.append((f"{len(ranked) - len(shown)} more", sum(v for _, v in ranked[MOST_LANGS:])))
    names = [n for n, _ in shown][::-1]
    # left of the bars: the language names (10 pt tick labels), measured
    fig, (ax,) = _fixed(1, max(3.0, 0.28 * len(shown) + 1), top=0.4, bottom=0.65,
                        left=_text_size(names, 10)[0] + 0.25, right=0.25)
    values = [v for _, v in shown][::-1]
    ax.barh(names, values, color=[KIND_COLORS.get(kind_of.get(n, ""), "#999999") for n in names])
    for y, v in enumerate(values):
        ax.text(v, y, f" {human(v)}", va="center", fontsize=7)
    ax.xaxis.set_major_formatter(lambda v, _: human(v))
    ax.set_xlabel("tokens (output documents, before mixing)")
    ax.set_title(f"Tokens by language: {human(profile.get('tokens', 0))} in total "
                 "(blue code, orange text)")
    ax.margins(x=0.12)
    return Plot("tokens_by_language", "Tokens by language",
                "Tokens of the kept documents per language, before the mixture's up- and "
                "down-sampling.", _png(fig))


def lengths(stats: dict[str, Any]) -> Plot | None:
    """Histograms of document length in bytes (and tokens), per kind, log scale."""
    profile = stats.get("profile") or {}
    hists = [h for h in (profile.get("length_histogram"), profile.get("token_histogram"))
             if h and any(sum(c) for c in h["counts"].values())]
    if not hists:
        return None
    # a title above each panel, the tick labels and the axis label below it
    fig, axes = _fixed(len(hists), 3.6, top=0.4, bottom=0.65, right=0.45)
    for ax, hist in zip(axes, hists, strict=True):
        edges = hist["edges"]
        for kind, counts in hist["counts"].items():
            ax.stairs(counts, edges, label=f"{kind} ({human(sum(counts))} docs)",
                      color=KIND_COLORS.get(kind, "#555555"), linewidth=1.5)
        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(NullLocator())  # decades suffice; minor ticks cost ~0.1 s
        # 1, 10, ..., 1.0k as the other axes write numbers: the default 10^n labels are
        # mathtext, whose parser is built on first use and lays out each label anew
        ax.xaxis.set_major_formatter(lambda v, _: human(v))
        used = [i for counts in hist["counts"].values() for i, c in enumerate(counts) if c]
        ax.set_xlim(edges[max(min(used) - 1, 0)], edges[min(max(used) + 2, len(edges) - 1)])
        ax.set_xlabel(f"document length ({hist['unit']})")
        ax.set_ylabel("documents")
        ax.yaxis.set_major_formatter(lambda v, _: human(v))  # <= 6 characters
        ax.legend(fontsize=8)
        ax.set_title(f"Document length in {hist['unit']} "
                     f"(all documents of the {profile['shards']} output shards)")
    return Plot("lengths", "Document lengths",
                "Histograms of the kept documents' length, per kind, on log-spaced bins "
                "(4 per decade).", _png(fig))


def cluster_sizes(stats: dict[str, Any]) -> Plot | None:
    """Near-duplicate cluster sizes of every stage that reports them."""
    found = [s for s in stats.get("stages") or [] if s.get("cluster_sizes")]
    if not found:
        return None
    fig, axes = _fixed(len(found), 3.4, top=0.4, bottom=0.65)  # bins: short labels
    for ax, stage in zip(axes, found, strict=True):
        # bins are labelled "2", "5-8", ">=1025": order them by their lower bound
        sizes = dict(sorted(stage["cluster_sizes"].items(),
                            key=lambda kv: int(re.findall(r"\d+", kv[0])[0])))
        ax.bar(list(sizes), list(sizes.values()), color="#4e79a7", width=0.6)
        ax.set_xlim(-0.6, max(len(sizes), 6) - 0.4)  # a few bins stay narrow bars
        for x, v in enumerate(sizes.values()):
            ax.text(x, v, human(v), ha="center", va="bottom", fontsize=7)
        ax.set_yscale("log")
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(lambda v, _: human(v))  # not mathtext 10^n
        ax.set_xlabel("documents in the cluster")
        ax.set_ylabel("clusters")
        ax.set_title(f"{stage['name']}: {human(stage.get('clusters', sum(sizes.values())))} "
                     f"clusters, {human(stage['removed']['docs'])} documents removed")
        ax.margins(y=0.15)
    return Plot("cluster_sizes", "Duplicate cluster sizes",
                "How many clusters of near duplicates hold 2, 3, ... documents "
                "(one document per cluster is kept).", _png(fig))


def bar_chart(chart: BarChart) -> Plot | Note:
    """A stage's figure (its `figures` hook): the series side by side per category."""
    if len(chart.labels) == 1:
        shown = ", ".join(
            f"{label} {bars[0]:.1%}" if chart.percent else f"{label} {human(bars[0])}"
            for label, _, bars in chart.series)
        return Note(chart.name, chart.title,
                    f"One category, {' '.join(chart.labels[0].split())}: {shown}.")
    # below the bars: the category labels (8 pt, maybe several lines), measured
    fig, (ax,) = _fixed(1, 4.2, top=0.4, bottom=_text_size(chart.labels, 8)[1] + 0.25)
    xs = range(len(chart.labels))
    width = 0.8 / len(chart.series)
    offsets = [(i - (len(chart.series) - 1) / 2) * width for i in range(len(chart.series))]
    for (label, color, values), offset in zip(chart.series, offsets, strict=True):
        ax.bar([x + offset for x in xs], values, width=width, color=color, label=label)
    for x in xs:
        for (_, _, values), offset in zip(chart.series, offsets, strict=True):
            text = f"{values[x]:.1%}" if chart.percent else human(values[x])
            ax.text(x + offset, values[x], text, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(xs), chart.labels, fontsize=8)
    ax.set_ylabel(chart.ylabel)
    if chart.percent:
        ax.yaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    else:
        ax.yaxis.set_major_formatter(lambda v, _: human(v))
    ax.legend(fontsize=8)
    ax.margins(y=0.15)
    ax.set_title(chart.heading)
    return Plot(chart.name, chart.title, chart.caption, _png(fig))


PLOTS: list[Callable[[dict[str, Any]], Plot | Note | None]] = [
    waterfall, mixture, tokens_by_language, lengths, cluster_sizes]
"""The run's own figures; the stages' (their `figures` hook) follow, in stage order."""


def make_plots(stats: dict[str, Any]) -> list[Plot | Note]:
    """Every figure this run has data for, in report order."""
    plots = [plot for make in PLOTS if (plot := make(stats)) is not None]
    for stage in stats.get("stages") or []:
        if stage["name"] in STAGE_INFO:
            plots += [bar_chart(c) for c in stage_hooks(stage["name"]).figures(stage, stats)]
    return plots
