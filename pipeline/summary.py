"""The closing summary of a build: documents and bytes per stage and language."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f}"


def print_summary(stats: dict[str, Any], run_dir: str, seconds: float, console: Console) -> None:
    stages = Table(title=f"{stats['manifest']}: documents per stage", title_justify="left")
    for column in ("stage", "in docs", "kept", "removed", "in MB", "kept MB", "top reasons"):
        stages.add_column(column, justify="left" if column in ("stage", "top reasons") else "right")
    for stage in stats["stages"]:
        reasons = sorted(stage["removed_by_reason"].items(), key=lambda kv: -kv[1]["docs"])[:3]
        stages.add_row(stage["name"], f"{stage['in']['docs']:,}", f"{stage['kept']['docs']:,}",
                       f"{stage['removed']['docs']:,}", _mb(stage["in"]["bytes"]),
                       _mb(stage["kept"]["bytes"]),
                       ", ".join(f"{r.split(':', 1)[1]} {c['docs']:,}" for r, c in reasons))
    console.print(stages)
    langs = Table(title="kept documents by language", title_justify="left")
    for column in ("language", "docs", "MB"):
        langs.add_column(column, justify="left" if column == "language" else "right")
    by_lang = sorted(stats["output"]["by_lang"].items(), key=lambda kv: -kv[1]["bytes"])
    for lang, counts in by_lang[:15]:
        langs.add_row(lang, f"{counts['docs']:,}", _mb(counts["bytes"]))
    if len(by_lang) > 15:
        rest = by_lang[15:]
        langs.add_row(f"({len(rest)} more)", f"{sum(c['docs'] for _, c in rest):,}",
                      _mb(sum(c["bytes"] for _, c in rest)))
    console.print(langs)
    out = stats["output"]
    console.print(f"kept {out['docs']:,} of {stats['input']['docs']:,} documents "
                  f"({_mb(out['bytes'])} of {_mb(stats['input']['bytes'])} MB) in {seconds:.0f} s")
    read = stats.get("read")
    if read:  # mixture.read: needed: what share of each source the mix needed
        shares = ", ".join(f"{name} {s['fraction_read']:.0%}"
                           for name, s in read["sources"].items())
        console.print(f"read (mixture.read: needed, {read['rounds']} rounds): {shares}",
                      highlight=False, soft_wrap=True)
    run = run_dir.rstrip("/")
    console.print(f"output: {run}/{out['dir']}/  removed: {run}/removed/  "
                  f"stats: {run}/stats.json", highlight=False, soft_wrap=True)
