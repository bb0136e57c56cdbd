"""The few SVG parts the run's figures are drawn with (plots.py): a canvas of rectangles,
lines, paths and text, axes with ticks, a legend. Text stays text, in a sans-serif font
the viewer has.

Why not a plotting library: the figures are a handful of bar charts and step
histograms, and a small build draws them while its user waits. matplotlib took 0.4-0.7 s
of a 1 s build to draw two of them and ~0.7 CPU s to import; pygal (3.1) writes a
random `uuid4` into every chart's id and CSS, so its bytes change from run to run;
leather (0.4) has no stacked bars and no log axis; drawsvg and svgwrite only write the
elements, which is the part this module keeps short. The charts' logic (which bars, what
labels) is plots.py; what is here is geometry.

Output is deterministic: coordinates are rounded to 0.1 px and nothing else varies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

FONT = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif"
WIDTH = 1000.0
"""Every figure's width in px (the report shows figures at most 1100 px wide)."""

# Advance widths of DejaVu Sans in em, by class, rounded up: the widest of the common sans
# fonts but Verdana, so text measured with them fits in the others. Anything else
# (non-ASCII) is counted 1 em.
_EM_CLASSES = ((0.34, "'ijlIJ,. /:;\\|"), (0.42, "f-()[]t!r"), (0.8, "KAVXZBRCUNHDG&OQ"),
               (1.0, "wmMW%@#+<=>^~"))
_EM = {c: em for em, chars in _EM_CLASSES for c in chars}
_PLAIN = 0.64  # lower case, digits and the remaining capitals


def text_width(text: str, size: float) -> float:
    """An upper bound of the width in px of one line of `text` at font size `size`."""
    return size * sum(_EM.get(c, _PLAIN if c.isascii() else 1.0) for c in text)


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Characters XML 1.0 cannot hold, which a label read from the data (a language column)
may: shown as U+FFFD, so the figure stays a valid document."""


def _xml(text: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", text))


def _n(value: float) -> str:
    """A coordinate: 0.1 px, no trailing zeros."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


@dataclass
class Canvas:
    """An SVG document `height` px high and WIDTH wide, built element by element."""

    height: float
    title: str
    parts: list[str] = field(default_factory=list)

    def rect(self, x: float, y: float, w: float, h: float, fill: str,
             stroke: str | None = None, stroke_width: float = 1.0) -> None:
        if w < 0:
            x, w = x + w, -w
        if h < 0:
            y, h = y + h, -h
        edge = f' stroke="{stroke}" stroke-width="{_n(stroke_width)}"' if stroke else ""
        self.parts.append(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" '
                          f'fill="{fill}"{edge}/>')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#222222",
             width: float = 1.0) -> None:
        self.parts.append(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" '
                          f'stroke="{stroke}" stroke-width="{_n(width)}"/>')

    def polyline(self, points: Sequence[tuple[float, float]], stroke: str,
                 width: float = 1.5) -> None:
        joined = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        self.parts.append(f'<polyline points="{joined}" fill="none" stroke="{stroke}" '
                          f'stroke-width="{_n(width)}" stroke-linejoin="miter"/>')

    def text(self, x: float, y: float, text: str, size: float = 13, anchor: str = "middle",
             rotate: float = 0.0, bold: bool = False, fill: str = "#222222") -> None:
        """`text` with its baseline at `y` (several lines go down from there);
        `rotate` degrees counter-clockwise about (x, y)."""
        turn = f' transform="rotate({_n(-rotate)} {_n(x)} {_n(y)})"' if rotate else ""
        weight = ' font-weight="bold"' if bold else ""
        lines = text.split("\n")
        body = _xml(lines[0]) + "".join(
            f'<tspan x="{_n(x)}" dy="{_n(size * 1.2)}">{_xml(line)}</tspan>'
            for line in lines[1:])
        colour = f' fill="{fill}"' if fill != "#222222" else ""
        self.parts.append(f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" '
                          f'text-anchor="{anchor}"{turn}{weight}{colour}>{body}</text>')

    def svg(self) -> bytes:
        body = "\n".join(self.parts)
        hatch = ('<defs><pattern id="hatch" width="8" height="8" patternUnits="userSpaceOnUse">'
                 '<rect width="8" height="8" fill="#ffffff"/><path d="M-2,2 l4,-4 M0,8 l8,-8 '
                 'M6,10 l4,-4" stroke="#555555" stroke-width="1"/></pattern></defs>\n'
                 if HATCH in body else "")
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(WIDTH)}" '
                f'height="{_n(self.height)}" viewBox="0 0 {_n(WIDTH)} {_n(self.height)}" '
                f'font-family="{FONT}" fill="#222222">\n<title>{_xml(self.title)}</title>\n'
                f'{hatch}<rect width="{_n(WIDTH)}" height="{_n(self.height)}" fill="#ffffff"/>\n'
                f"{body}\n</svg>\n").encode()


HATCH = "url(#hatch)"
"""The fill of merged (not lost) bars: grey diagonal lines on white."""


def nice_ticks(high: float, count: int = 5, whole: bool = True) -> list[float]:
    """0 and multiples of 1, 2, 2.5 or 5 x 10^k up to `high`, about `count` of them;
    `whole`: only whole numbers (counts: no 2.5 documents)."""
    if high <= 0:
        return [0.0]
    rough = high / count
    power = 10 ** math.floor(math.log10(rough))
    steps = [m * power for m in (1, 2, 2.5, 5, 10)]
    if whole:
        steps = [s for s in steps if s >= 1 and float(s).is_integer()]
    step = next(s for s in steps if s >= rough)
    return [i * step for i in range(int(high / step + 1e-9) + 1)]


def decades(low: float, high: float) -> list[float]:
    """The powers of ten in [low, high]."""
    first, last = math.ceil(math.log10(low) - 1e-9), math.floor(math.log10(high) + 1e-9)
    return [10.0 ** k for k in range(first, last + 1)]


@dataclass
class Axes:
    """A plot area at (x, y), w by h px, and the data ranges it maps; `xlog`/`ylog` map
    the logarithm. Nothing is drawn until its methods are called."""

    canvas: Canvas
    x: float
    y: float
    w: float
    h: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    xlog: bool = False
    ylog: bool = False

    def px(self, value: float) -> float:
        low, high = self.xlim
        if self.xlog:
            value, low, high = math.log10(value), math.log10(low), math.log10(high)
        return self.x + (value - low) / (high - low) * self.w

    def py(self, value: float) -> float:
        low, high = self.ylim
        if self.ylog:
            value, low, high = (math.log10(max(value, low)), math.log10(low),
                                math.log10(high))
        return self.y + self.h - (value - low) / (high - low) * self.h

    def frame(self) -> None:
        self.canvas.rect(self.x, self.y, self.w, self.h, "none", "#222222", 0.8)

    def yticks(self, values: Sequence[float], label: Callable[[float], str],
               grid: bool = True) -> None:
        for value in values:
            y = self.py(value)
            if grid:
                self.canvas.line(self.x, y, self.x + self.w, y, "#e6e6e6", 1)
            self.canvas.line(self.x - 4, y, self.x, y, "#222222", 0.8)
            self.canvas.text(self.x - 7, y + 4.5, label(value), 13, "end")

    def xticks(self, values: Sequence[float], labels: Sequence[str], size: float = 13,
               rotate: float = 0.0, grid: bool = False) -> None:
        """Labels centred under their tick, or, rotated, ending at it."""
        for value, label in zip(values, labels, strict=True):
            x = self.px(value)
            bottom = self.y + self.h
            if grid:
                self.canvas.line(x, self.y, x, bottom, "#e6e6e6", 1)
            self.canvas.line(x, bottom, x, bottom + 4, "#222222", 0.8)
            if rotate:
                self.canvas.text(x + 3, bottom + 8 + size * 0.75, label, size, "end", rotate)
            else:
                self.canvas.text(x, bottom + 8 + size * 0.8, label, size)

    def labels(self, xlabel: str = "", ylabel: str = "", title: str = "",
               xlabel_at: float = 38) -> None:
        """The axis labels (x's `xlabel_at` px below the axes) and a title above."""
        if xlabel:
            self.canvas.text(self.x + self.w / 2, self.y + self.h + xlabel_at, xlabel, 14)
        if ylabel:
            x, y = self.x - 58, self.y + self.h / 2
            self.canvas.text(x, y, ylabel, 14, "middle", rotate=90)
        if title:
            self.canvas.text(self.x + self.w / 2, self.y - 10, title, 16)


SWATCH = 18.0  # a legend entry's colour patch, and the gap after it
LEGEND_SIZE = 11.0


def legend_columns(labels: Sequence[str], room: float) -> tuple[int, float]:
    """As many columns (at most 4) of entries as fit in `room` px; and each one's width."""
    widest = max((text_width(label, LEGEND_SIZE) for label in labels), default=0.0)
    column = SWATCH + 8 + widest + 16
    return max(1, min(4, int(room // column))), column


def legend(canvas: Canvas, entries: Sequence[tuple[str, str]], x: float, y: float,
           room: float, align: str = "center") -> float:
    """(label, fill) entries in framed columns, from `y` down, centred on `x` (or
    ending at `x` with align="right"); returns the legend's height."""
    columns, column = legend_columns([label for label, _ in entries], room)
    rows = -(-len(entries) // columns)
    width = min(columns, len(entries)) * column + 4
    height = rows * LEGEND_SIZE * 1.6 + 8
    left = x - width / 2 if align == "center" else x - width
    canvas.rect(left, y, width, height, "#ffffff", "#cccccc", 0.8)
    for i, (label, fill) in enumerate(entries):
        row, col = divmod(i, columns)
        ex, ey = left + 8 + col * column, y + 4 + row * LEGEND_SIZE * 1.6
        canvas.rect(ex, ey + 3, SWATCH, LEGEND_SIZE * 0.9, fill,
                    "#555555" if fill == HATCH else None, 0.5)
        canvas.text(ex + SWATCH + 6, ey + LEGEND_SIZE * 1.1, label, LEGEND_SIZE, "start")
    return height


def line_legend(canvas: Canvas, entries: Sequence[tuple[str, str]], right: float,
                top: float) -> None:
    """Coloured line samples and their labels in a framed box whose top right corner is
    (right, top): the histograms' legend."""
    width = max(text_width(label, LEGEND_SIZE) for label, _ in entries) + SWATCH + 24
    canvas.rect(right - width, top, width, len(entries) * LEGEND_SIZE * 1.6 + 8, "#ffffff",
                "#cccccc", 0.8)
    for i, (label, colour) in enumerate(entries):
        y = top + 4 + i * LEGEND_SIZE * 1.6 + LEGEND_SIZE * 0.75
        canvas.line(right - width + 8, y, right - width + 8 + SWATCH, y, colour, 2)
        canvas.text(right - width + SWATCH + 14, y + LEGEND_SIZE * 0.35, label, LEGEND_SIZE,
                    "start")
