"""The run's figures as SVG, drawn from stats.json (the parts: svg.py).

Each function returns None when the run has nothing to show (no mixture, no
MinHash stage, ...), and a `Note` when a bar chart would hold one category (one
mixture component, one language): a sentence says what the one bar would. The SVG
holds no date and no random id, so the same stats give the same bytes and a resumed
run's report stays byte-identical. Sizes are in px, the figures WIDTH (1000) wide;
each figure's margins hold its text, measured by `text_width` where it is free
(languages, mixture keys, reasons).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...stages.hooks import BarChart, human
from ...stages.registry import STAGE_INFO, stage_hooks
from .svg import (
    HATCH,
    WIDTH,
    Axes,
    Canvas,
    decades,
    legend,
    legend_columns,
    line_legend,
    nice_ticks,
    text_width,
)

KIND_COLORS = {"code": "#1f77b4", "text": "#ff7f0e"}
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"]
MOST_REASONS = 11  # the rest are drawn as one grey "other reasons" segment
MOST_LANGS = 20
LEFT = 85.0  # room for the y tick labels (<= 6 characters, as `human` writes them) and label
SLANT = 20.0  # degrees of the rotated category labels


@dataclass(frozen=True)
class Plot:
    name: str
    title: str
    caption: str
    svg: bytes


@dataclass(frozen=True)
class Note:
    """A figure that would show one category, said in a sentence (the report prints it
    where the figure would be; no plots/ file)."""

    name: str
    title: str
    text: str


def _slanted(labels: list[str], size: float) -> tuple[float, float]:
    """How far labels rotated by SLANT and ending at their tick reach left of it and
    below it, in px."""
    widest = max((text_width(label, size) for label in labels), default=0.0)
    angle = math.radians(SLANT)
    return widest * math.cos(angle), widest * math.sin(angle) + size * math.cos(angle)


def _share(ticks: list[float]) -> Callable[[float], str]:
    """Percent labels with the decimals the ticks' step needs (2.5%, not 2%)."""
    step = round((ticks[1] if len(ticks) > 1 else ticks[0]) * 100, 6)
    digits = next((d for d in range(4) if round(step, d) == step), 4)
    return lambda v: f"{v * 100:.{digits}f}%"


def _above(canvas: Canvas, x: float, y: float, text: str, size: float) -> None:
    """`text` centred on x, its last line's baseline 3 px above y."""
    lines = text.count("\n")
    canvas.text(x, y - 3 - lines * size * 1.2, text, size)


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
    entries = [(r, color[r]) for r in shown]
    if len(ranked) > len(shown):
        entries.append((f"{len(ranked) - len(shown)} other reasons", "#cccccc"))
    if any(step.merged for step in waterfall_steps(stats, "docs")):
        entries.append(("merged (kept inside other documents)", HATCH))
    labels = ["input", *[s["name"] for s in stages], "output"]
    _, drop = _slanted(labels, 11)
    panel, top, bottom = 380.0, 55.0, drop + 30
    columns, _ = legend_columns([label for label, _ in entries], WIDTH - 40)
    foot = (-(-len(entries) // columns) * 11 * 1.6 + 8 + 20) if entries else 0.0
    canvas = Canvas(2 * (top + panel + bottom) + foot, "What each stage removed")
    canvas.text(WIDTH / 2, 24, "What each stage removed (bars split by reason)", 17)
    for i, unit in enumerate(("docs", "bytes")):
        steps = waterfall_steps(stats, unit)
        high = max(max(s.start, s.end) for s in steps) * 1.12 or 1.0
        ax = Axes(canvas, LEFT, top + i * (top + panel + bottom), WIDTH - LEFT - 20, panel,
                  (-0.7, len(labels) - 0.3), (0, high))
        ax.yticks(nice_ticks(high), human)
        ax.xticks(range(len(labels)), labels, 11, SLANT)
        ax.labels(ylabel="documents" if unit == "docs" else "bytes")

        def bar(x: float, low: float, high: float, fill: str, ax: Axes = ax) -> None:
            ax.canvas.rect(ax.px(x - 0.4), ax.py(high), ax.px(x + 0.4) - ax.px(x - 0.4),
                           ax.py(low) - ax.py(high), fill,
                           "#555555" if fill == HATCH else None, 0.5)

        bar(0, 0, steps[0].start, "#777777")
        _above(canvas, ax.px(0), ax.py(steps[0].start), human(steps[0].start), 11)
        for x, step in enumerate(steps, start=1):
            level = step.start
            for reason, size in sorted(step.removed.items(),
                                       key=lambda kv: (kv[0] not in color, kv[0])):
                if size > 0:
                    bar(x, level - size, level, color.get(reason, "#cccccc"))
                    level -= size
            if step.merged:  # merged rows live on in the kept documents: a hatched step
                bar(x, 0, step.end, HATCH)
            canvas.line(ax.px(x - 0.4), ax.py(step.start), ax.px(x + 0.4), ax.py(step.start),
                        "#333333", 1.2)
            lost = sum(step.removed.values())
            text = f"-{human(lost)}" if lost else "0"
            if step.merged:
                text = f"{text}\nmerged"
            _above(canvas, ax.px(x), ax.py(max(step.start, step.end)), text, 11)
        end = len(labels) - 1
        bar(end, 0, steps[-1].end, "#2ca02c")
        _above(canvas, ax.px(end), ax.py(steps[-1].end), human(steps[-1].end), 11)
        ax.frame()
    if entries:
        legend(canvas, entries, WIDTH / 2, canvas.height - foot + 10, WIDTH - 40)
    return Plot("waterfall", "Removed per stage",
                "Documents (top) and bytes (bottom): the input, what each stage removed "
                "(coloured by reason) or merged into documents it kept (hatched: not lost), "
                "and the output; each level is the stage's kept count in stats.json.",
                canvas.svg())


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
    # the keys, rotated and ending at their tick: what the first reaches left of its
    # tick (0.6 of a bar slot in from the axes' edge) and how far all reach down
    reach = _slanted(keys[:1], 13)[0]
    _, drop = _slanted(keys, 13)
    left = max(LEFT, reach + 15 - (WIDTH - LEFT - 20) * 0.6 / len(keys))
    panel, top = 380.0, 50.0
    canvas = Canvas(top + panel + drop + 30, "Token mix by component")
    target = [c.get("target_share", 0.0) for c in components]
    real = [c.get("realized_share", 0.0) for c in components]
    high = max([*target, *real, 0.01]) * 1.25
    ax = Axes(canvas, left, top, WIDTH - left - 20, panel, (-0.6, len(keys) - 0.4), (0, high))
    ticks = nice_ticks(high, whole=False)
    ax.yticks(ticks, _share(ticks))
    ax.xticks(range(len(keys)), keys, 13, SLANT)
    ax.labels(ylabel="share of tokens",
              title=f"Token mix: {human(mix.get('used_tokens', 0))} tokens, worst relative "
                    f"share error {mix.get('max_share_error', 0):.2e}")
    for x, (component, want, got) in enumerate(zip(components, target, real, strict=True)):
        canvas.rect(ax.px(x - 0.4), ax.py(want), ax.px(x) - ax.px(x - 0.4),
                    ax.py(0) - ax.py(want), "#bbbbbb")
        canvas.rect(ax.px(x), ax.py(got), ax.px(x + 0.4) - ax.px(x), ax.py(0) - ax.py(got),
                    "#1f77b4")
        _above(canvas, ax.px(x + 0.2), ax.py(got),
               f"{human(component['used_tokens'])} tok\n"
               f"{component.get('realized_epochs', 0):.2f} ep", 10)
    ax.frame()
    legend(canvas, [("target", "#bbbbbb"), ("realized", "#1f77b4")], ax.x + ax.w - 8,
           top + 8, 400, align="right")
    return Plot("mixture", "Token mix by component",
                "Target vs realized share of tokens per mixture component; labels give the "
                "tokens used and the epochs over the component's available tokens.",
                canvas.svg())


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
    # left of the bars: the language names, measured; one 28 px row each
    left = max(text_width(name, 13) for name, _ in shown) + 20
    panel, top = max(200.0, 28.0 * len(shown)), 50.0
    canvas = Canvas(top + panel + 65, "Tokens by language")
    high = max(v for _, v in shown) * 1.15
    ax = Axes(canvas, left, top, WIDTH - left - 25, panel, (0, high), (len(shown) - 0.5, -0.5))
    ax.xticks(nice_ticks(high), [human(v) for v in nice_ticks(high)], grid=True)
    ax.labels(xlabel="tokens (output documents, before mixing)",
              title=f"Tokens by language: {human(profile.get('tokens', 0))} in total "
                    "(blue code, orange text)")
    for y, (name, value) in enumerate(shown):
        canvas.rect(ax.px(0), ax.py(y - 0.4), ax.px(value) - ax.px(0),
                    ax.py(y + 0.4) - ax.py(y - 0.4),
                    KIND_COLORS.get(kind_of.get(name, ""), "#999999"))
        canvas.text(ax.px(value) + 4, ax.py(y) + 4, human(value), 10, "start")
        canvas.line(ax.px(0) - 4, ax.py(y), ax.px(0), ax.py(y), "#222222", 0.8)
        canvas.text(ax.px(0) - 7, ax.py(y) + 4.5, name, 13, "end")
    ax.frame()
    return Plot("tokens_by_language", "Tokens by language",
                "Tokens of the kept documents per language, before the mixture's up- and "
                "down-sampling.", canvas.svg())


def lengths(stats: dict[str, Any]) -> Plot | None:
    """Histograms of document length in bytes (and tokens), per kind, log scale."""
    profile = stats.get("profile") or {}
    hists = [h for h in (profile.get("length_histogram"), profile.get("token_histogram"))
             if h and any(sum(c) for c in h["counts"].values())]
    if not hists:
        return None
    panel, top, bottom = 300.0, 45.0, 55.0  # a title above each panel, ticks and label below
    canvas = Canvas(len(hists) * (top + panel + bottom) + 10, "Document lengths")
    for i, hist in enumerate(hists):
        edges = hist["edges"]
        used = [i for counts in hist["counts"].values() for i, c in enumerate(counts) if c]
        first, last = max(min(used) - 1, 0), min(max(used) + 2, len(edges) - 1)
        high = max(max(counts) for counts in hist["counts"].values()) * 1.08
        ax = Axes(canvas, LEFT, top + i * (top + panel + bottom), WIDTH - LEFT - 45, panel,
                  (edges[first], edges[last]), (0, high), xlog=True)
        ax.yticks(nice_ticks(high), human)
        ticks = decades(edges[first], edges[last])  # 1, 10, ..., 1.0k: decades suffice
        ax.xticks(ticks, [human(v) for v in ticks], grid=True)
        ax.labels(xlabel=f"document length ({hist['unit']})", ylabel="documents",
                  title=f"Document length in {hist['unit']} "
                        f"(all documents of the {profile['shards']} output shards)")
        entries = []
        for kind, counts in hist["counts"].items():
            colour = KIND_COLORS.get(kind, "#555555")
            points = [(ax.px(edges[first]), ax.py(0))]
            for b in range(first, last):
                points += [(ax.px(edges[b]), ax.py(counts[b])),
                           (ax.px(edges[b + 1]), ax.py(counts[b]))]
            points.append((ax.px(edges[last]), ax.py(0)))
            canvas.polyline(points, colour, 1.8)
            entries.append((f"{kind} ({human(sum(counts))} docs)", colour))
        ax.frame()
        line_legend(canvas, entries, ax.x + ax.w - 8, ax.y + 8)
    return Plot("lengths", "Document lengths",
                "Histograms of the kept documents' length, per kind, on log-spaced bins "
                "(4 per decade).", canvas.svg())


def cluster_sizes(stats: dict[str, Any]) -> Plot | None:
    """Near-duplicate cluster sizes of every stage that reports them."""
    found = [s for s in stats.get("stages") or [] if s.get("cluster_sizes")]
    if not found:
        return None
    panel, top, bottom = 280.0, 45.0, 55.0  # bins: short labels
    canvas = Canvas(len(found) * (top + panel + bottom) + 10, "Duplicate cluster sizes")
    for i, stage in enumerate(found):
        # bins are labelled "2", "5-8", ">=1025": order them by their lower bound
        sizes = dict(sorted(stage["cluster_sizes"].items(),
                            key=lambda kv: int(re.findall(r"\d+", kv[0])[0])))
        high = max(sizes.values()) * 3.0  # log scale: room for the labels
        ax = Axes(canvas, LEFT, top + i * (top + panel + bottom), WIDTH - LEFT - 20, panel,
                  (-0.6, max(len(sizes), 6) - 0.4), (0.5, high), ylog=True)
        ax.yticks(decades(1, high), human)
        ax.xticks(range(len(sizes)), list(sizes))
        ax.labels(xlabel="documents in the cluster", ylabel="clusters",
                  title=f"{stage['name']}: "
                        f"{human(stage.get('clusters', sum(sizes.values())))} clusters, "
                        f"{human(stage['removed']['docs'])} documents removed")
        for x, v in enumerate(sizes.values()):
            canvas.rect(ax.px(x - 0.3), ax.py(v), ax.px(x + 0.3) - ax.px(x - 0.3),
                        ax.py(0.5) - ax.py(v), "#4e79a7")
            _above(canvas, ax.px(x), ax.py(v), human(v), 11)
        ax.frame()
    return Plot("cluster_sizes", "Duplicate cluster sizes",
                "How many clusters of near duplicates hold 2, 3, ... documents "
                "(one document per cluster is kept).", canvas.svg())


def bar_chart(chart: BarChart) -> Plot | Note:
    """A stage's figure (its `figures` hook): the series side by side per category."""
    if len(chart.labels) == 1:
        shown = ", ".join(
            f"{label} {bars[0]:.1%}" if chart.percent else f"{label} {human(bars[0])}"
            for label, _, bars in chart.series)
        return Note(chart.name, chart.title,
                    f"One category, {' '.join(chart.labels[0].split())}: {shown}.")
    # below the bars: the category labels (12 px, maybe several lines)
    lines = max(label.count("\n") + 1 for label in chart.labels)
    panel, top = 380.0, 50.0
    canvas = Canvas(top + panel + lines * 12 * 1.2 + 30, chart.title)
    values = [v for _, _, vs in chart.series for v in vs]
    high = max([*values, 0.01 if chart.percent else 1]) * 1.15
    ax = Axes(canvas, LEFT, top, WIDTH - LEFT - 20, panel, (-0.6, len(chart.labels) - 0.4),
              (0, high))
    ticks = nice_ticks(high, whole=not chart.percent)
    ax.yticks(ticks, _share(ticks) if chart.percent else human)
    ax.xticks(range(len(chart.labels)), chart.labels, 12)
    ax.labels(ylabel=chart.ylabel, title=chart.heading)
    width = 0.8 / len(chart.series)
    for i, (_, colour, series) in enumerate(chart.series):
        offset = (i - (len(chart.series) - 1) / 2) * width
        for x, value in enumerate(series):
            canvas.rect(ax.px(x + offset - width / 2), ax.py(value),
                        ax.px(x + offset + width / 2) - ax.px(x + offset - width / 2),
                        ax.py(0) - ax.py(value), colour)
            _above(canvas, ax.px(x + offset), ax.py(value),
                   f"{value:.1%}" if chart.percent else human(value), 10)
    ax.frame()
    legend(canvas, [(label, colour) for label, colour, _ in chart.series], ax.x + ax.w - 8,
           top + 8, ax.w - 16, align="right")
    return Plot(chart.name, chart.title, chart.caption, canvas.svg())


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
