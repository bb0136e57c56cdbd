"""A finished run's published documents, written together from stats.json: plots/*.png,
report.html (report.py) and README.md, the dataset card (card.py)."""

from __future__ import annotations

import json
from typing import Any

from ...stages import storage
from .card import write_card
from .examples import examples_section, removed_examples
from .plots import make_plots
from .public import public_text
from .report import esc, manifest_yaml, render_report


def write_run_docs(run_dir: str, stats: dict[str, Any] | None = None) -> list[str]:
    """plots/*.png, report.html and README.md (the card) from stats.json; their paths."""
    given = stats or storage.read_json(storage.join(run_dir, "stats.json"))
    # Key order as stats.json stores it (sorted), so `build` and `card` render the same bytes.
    ordered: dict[str, Any] = json.loads(json.dumps(given, sort_keys=True))
    plots = make_plots(ordered)
    written = []
    for plot in plots:
        path = storage.join(run_dir, "plots", f"{plot.name}.png")
        storage.write_bytes_atomic(path, plot.png)
        written.append(path)
    text = manifest_yaml(run_dir)
    report = storage.join(run_dir, "report.html")
    shown = examples_section(removed_examples(run_dir), esc)
    page = public_text(render_report(ordered, plots, text, shown), run_dir)  # it is published
    storage.write_bytes_atomic(report, page.encode())
    written.append(report)
    written.append(write_card(run_dir, ordered, [p.name for p in plots], text))
    return written
