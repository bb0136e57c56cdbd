"""A finished run's published documents, written together from stats.json: plots/*.png,
report.html (report.py) and README.md, the dataset card (card.py)."""

from __future__ import annotations

import json
from typing import Any

from ...stages import storage
from .card import write_card
from .plots import make_plots
from .public import public_text
from .report import manifest_yaml, render_report


def write_run_docs(run_dir: str, stats: dict[str, Any] | None = None) -> list[str]:
    """plots/*.png, report.html and README.md (the card) from stats.json; their paths."""
    stats = stats or storage.read_json(storage.join(run_dir, "stats.json"))
    # Key order as stats.json stores it (sorted), so `build` and `card` render the same bytes.
    stats = json.loads(json.dumps(stats, sort_keys=True))
    plots = make_plots(stats)
    written = []
    for plot in plots:
        path = storage.join(run_dir, "plots", f"{plot.name}.png")
        storage.write_bytes_atomic(path, plot.png)
        written.append(path)
    text = manifest_yaml(run_dir)
    report = storage.join(run_dir, "report.html")
    page = public_text(render_report(stats, plots, text), run_dir)  # it is published
    storage.write_bytes_atomic(report, page.encode())
    written.append(report)
    written.append(write_card(run_dir, stats, [p.name for p in plots], text))
    return written
