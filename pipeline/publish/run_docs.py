"""A finished run's published documents, written together from stats.json: plots/*.svg,
report.html (report.py) and README.md, the dataset card (card.py)."""

from __future__ import annotations

import json
from typing import Any

from ...stages import storage
from ...stages.registry import listed_hooks
from .card import write_card
from .examples import examples_section, removed_examples
from .plots import Plot, make_plots
from .public import public_text
from .report import esc, manifest_yaml, render_report


def prepare() -> None:
    """Import what `write_run_docs` imports on its first call: every stage's hooks (the
    card's limitations name what the stages a run lacked leave open). `build` calls it
    in a thread while the tasks run, so the end of a build does not wait for it."""
    listed_hooks()


def write_run_docs(run_dir: str, stats: dict[str, Any] | None = None) -> list[str]:
    """plots/*.svg, report.html and README.md (the card) from stats.json; their paths."""
    given = stats or storage.read_json(storage.join(run_dir, "stats.json"))
    # Key order as stats.json stores it (sorted), so `build` and `card` render the same bytes.
    ordered: dict[str, Any] = json.loads(json.dumps(given, sort_keys=True))
    shown = make_plots(ordered)
    plots = [p for p in shown if isinstance(p, Plot)]  # the rest are sentences (Note)
    written = []
    for plot in shown:
        path = storage.join(run_dir, "plots", f"{plot.name}.svg")
        if isinstance(plot, Plot):
            storage.write_bytes_atomic(path, plot.svg)
            written.append(path)
        elif storage.exists(path):  # drawn by an earlier run: the card would list it
            _remove(path)
        old = storage.join(run_dir, "plots", f"{plot.name}.png")  # an earlier lemur-data's
        if storage.exists(old):
            _remove(old)
    text = manifest_yaml(run_dir)
    report = storage.join(run_dir, "report.html")
    examples = examples_section(removed_examples(run_dir), esc)
    page = public_text(render_report(ordered, shown, text, examples), run_dir)  # published
    storage.write_bytes_atomic(report, page.encode())
    written.append(report)
    written.append(write_card(run_dir, ordered, [f"{p.name}.svg" for p in plots], text))
    return written


def _remove(path: str) -> None:
    fs, inner = storage.filesystem(path)
    fs.rm(inner)
