"""report.html: one self-contained page (figures inlined as base64 SVG) from stats.json.

It renders whatever the run has: a stage missing from the manifest has no
section, and a stage's own figures (MinHash parameters, cluster sizes, ...)
are shown as they appear in stats.json. Nothing time-dependent goes in (the
timings stay in timings.json), so a resumed run writes the same bytes.
`run_docs.write_run_docs` writes the figures, the report and the dataset card together.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Sequence
from typing import Any

from ...stages import storage
from ...stages.registry import STAGE_INFO, stage_hooks
from .plots import Note, Plot

STANDARD_KEYS = {"name", "in", "kept", "removed", "removed_by_reason", "by_source", "by_lang",
                 "by_flag", "params", "removed_by_detail"}
"""The runner's keys of a stage's stats entry; the rest are the stage's own figures (but
those its `report_hidden` hook names)."""
CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;
color:#222;padding:0 1em}
h1{margin-bottom:0} .sub{color:#666;margin-top:.2em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px} th{background:#f3f3f3;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{background:#f6f6f6;font-size:12px} pre{padding:.8em;overflow-x:auto}
figure{margin:1em 0} figure img{max-width:100%;border:1px solid #eee}
figcaption{color:#555;font-size:13px} details{margin:.4em 0 1em}
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def number(value: Any) -> str:
    """Integers with thousands separators; floats as given; anything else escaped."""
    if isinstance(value, bool) or value is None:
        return esc(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.6g}"
    return esc(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], table_id: str = "") -> str:
    """An HTML table; numbers right-aligned, every cell escaped."""
    ident = f' id="{esc(table_id)}"' if table_id else ""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(f'<td class="n">{number(v)}</td>' if isinstance(v, int | float)
                        and not isinstance(v, bool) else f"<td>{esc(v)}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def figure(plot: Plot | Note) -> str:
    if isinstance(plot, Note):  # one category: a sentence where the figure would be
        return (f'<p class="figure-note" id="fig-{esc(plot.name)}"><strong>'
                f"{esc(plot.title)}.</strong> {esc(plot.text)}</p>")
    # an <img>, not inline <svg>: each figure a document of its own (its ids, its fonts)
    data = base64.b64encode(plot.svg).decode()
    return (f'<figure id="fig-{esc(plot.name)}"><img alt="{esc(plot.title)}" '
            f'src="data:image/svg+xml;base64,{data}"><figcaption>{esc(plot.caption)}'
            f"</figcaption></figure>")


def flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts as (dotted key, scalar) rows; lists of dicts stay whole."""
    if isinstance(value, dict):
        rows: list[tuple[str, Any]] = []
        for key, inner in value.items():
            rows += flatten(inner, f"{prefix}.{key}" if prefix else str(key))
        return rows
    return [(prefix, value)]


def scalar_text(value: Any) -> Any:
    if isinstance(value, int | float | str) or value is None:
        return value
    return json.dumps(value, sort_keys=True)


def by_count(counts: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def stage_rows(stats: dict[str, Any]) -> list[list[Any]]:
    """One row per stage: the numbers the report's main table shows (tests compare them)."""
    rows = []
    for stage in stats.get("stages") or []:
        reasons = sorted(stage["removed_by_reason"].items(), key=lambda kv: (-kv[1]["docs"], kv[0]))
        rows.append([stage["name"], stage["in"]["docs"], stage["kept"]["docs"],
                     stage["removed"]["docs"], stage["in"]["bytes"], stage["kept"]["bytes"],
                     stage["removed"]["bytes"],
                     ", ".join(f"{r.split(':', 1)[-1]} ({c['docs']:,})" for r, c in reasons[:4])])
    return rows


STAGE_HEADERS = ["stage", "in docs", "kept docs", "removed docs", "in bytes", "kept bytes",
                 "removed bytes", "top reasons"]


def merge_lines(stats: dict[str, Any]) -> dict[str, str]:
    """By stage name, the sentence of a stage that merged documents (StageHooks.merge_line):
    the report and the card print the same one."""
    lines: dict[str, str] = {}
    previous = None
    for stage in stats.get("stages") or []:
        if stage["name"] in STAGE_INFO:
            line = stage_hooks(stage["name"]).merge_line(stage, previous)
            if line:
                lines[stage["name"]] = line
        previous = stage
    return lines


def _stage_section(stage: dict[str, Any], merge: str = "") -> str:
    parts = [f'<h3 id="stage-{esc(stage["name"])}">{esc(stage["name"])}</h3>']
    if merge:
        parts.append(f'<p class="merge">{esc(merge[0].upper() + merge[1:])}.</p>')
    params = flatten(stage.get("params") or {})
    if params:
        parts.append(table(["parameter", "value"], [(k, scalar_text(v)) for k, v in params]))
    reasons = stage["removed_by_reason"]
    if reasons:
        parts.append(table(["reason", "docs", "bytes"],
                           [(r, c["docs"], c["bytes"]) for r, c in reasons.items()],
                           f"reasons-{stage['name']}"))
    hidden = STANDARD_KEYS | set(stage_hooks(stage["name"]).report_hidden
                                 if stage["name"] in STAGE_INFO else ())
    extra = {k: v for k, v in stage.items() if k not in hidden}
    scalars = [(k, v) for k, v in flatten(extra)
               if not (isinstance(v, list) and v and isinstance(v[0], dict))]
    if scalars:
        parts.append(table(["figure", "value"], [(k, scalar_text(v)) for k, v in scalars],
                           f"summary-{stage['name']}"))
    for key, value in flatten(extra):
        if isinstance(value, list) and value and isinstance(value[0], dict):
            headers = list(value[0])
            parts.append(f"<p>{esc(key)}</p>" + table(
                headers, [[scalar_text(item.get(h)) for h in headers] for item in value]))
    by_source = [(s, c["in"]["docs"], c["kept"]["docs"], c["removed"]["docs"], c["in"]["bytes"],
                  c["kept"]["bytes"]) for s, c in stage["by_source"].items()]
    by_lang = [(lang, c["kept"]["docs"] + c["removed"]["docs"], c["kept"]["docs"],
                c["removed"]["docs"], c["kept"]["bytes"] + c["removed"]["bytes"],
                c["kept"]["bytes"]) for lang, c in stage["by_lang"].items()]
    headers = ["in docs", "kept docs", "removed docs", "in bytes", "kept bytes"]
    # by_flag: {column: {value: {lang: {kept, removed}}}} for columns the stage counts by
    by_flag = [(flag, flag_value, lang, c["kept"]["docs"], c["removed"]["docs"],
                c["kept"]["bytes"], c["removed"]["bytes"])
               for flag, values in (stage.get("by_flag") or {}).items()
               for flag_value, langs in values.items() for lang, c in langs.items()]
    parts.append("<details><summary>by source and by language</summary>"
                 + table(["source", *headers], by_source, f"sources-{stage['name']}")
                 + table(["language", *headers], by_lang, f"langs-{stage['name']}")
                 + (table(["column", "value", "language", "kept docs", "removed docs",
                           "kept bytes", "removed bytes"], by_flag, f"flags-{stage['name']}")
                    if by_flag else "")
                 + "</details>")
    return "\n".join(parts)


def read_rows(stats: dict[str, Any]) -> list[list[Any]]:
    """Per source, with `read: needed`: what share of it the run read, and the yields."""
    read = stats.get("read") or {}
    return [[name, f"{s['fraction_read']:.1%}", f"{s['units_read']} of {s['units']}",
             s["bytes_read"], s["bytes_not_read"], s["pilot_yield_tokens_per_byte"],
             s["realized_yield_tokens_per_byte"]]
            for name, s in (read.get("sources") or {}).items()]


READ_HEADERS = ["source", "share read", "units read", "bytes read", "bytes not read (hint)",
                "pilot tokens/byte", "realized tokens/byte"]


def _read_section(stats: dict[str, Any]) -> str:
    read = stats.get("read")
    if not read:
        return ""
    return "\n".join([
        "<h2 id='read'>Input read</h2>",
        f"<p>mixture.read: needed: {read['rounds']} round(s); each source read up to the "
        f"prefix its mixture components need (margin {read['read_margin']:.0%}). Units "
        "not read are not counted as removed.</p>",
        table(READ_HEADERS, read_rows(stats), "read")])


def _mixture_section(stats: dict[str, Any]) -> str:
    mix = stats.get("mixture")
    if not mix:
        return ""
    headers = ["component", "weight", "target share", "realized share", "available tokens",
               "target tokens", "used tokens", "epochs", "available docs", "used docs"]
    rows = [(c["key"], c.get("weight") if c.get("weight") is not None else "-",
             c.get("target_share", 0.0), c.get("realized_share", 0.0), c["available_tokens"],
             c["target_tokens"], c["used_tokens"], c.get("realized_epochs", c.get("epochs", 0.0)),
             c["available_docs"], c.get("used_docs") if c.get("used_docs") is not None else "-")
            for c in mix["components"]]
    totals = [(k, scalar_text(v)) for k, v in flatten(mix) if not k.startswith("components")]
    out = ["<h2 id='mixture'>Mixture</h2>", table(headers, rows, "mixture"),
           table(["figure", "value"], totals)]
    megatron = stats.get("megatron")
    if megatron:
        out.append("<h3>Megatron output</h3>")
        shards = megatron.get("shards") or []
        if shards:
            keys = list(shards[0])
            out.append(table(keys, [[s.get(k) for k in keys] for s in shards], "megatron"))
        out.append(table(["figure", "value"], [(k, scalar_text(v)) for k, v in flatten(
            {k: v for k, v in megatron.items() if k != "shards"})]))
    return "\n".join(out)


def _profile_section(stats: dict[str, Any]) -> str:
    profile = stats.get("profile")
    if not profile:
        return ""
    out = ["<h2 id='output'>Output documents</h2>",
           table(["license", "docs"], by_count(profile["by_license"]), "output-by-license")]
    if "tokens" in profile:
        out.append(table(["source", "tokens"], list(profile["tokens_by_source"].items()),
                         "tokens-by-source"))
        out.append(table(["language", "tokens"], list(profile["tokens_by_lang"].items()),
                         "tokens-by-lang"))
    return "\n".join(out)


def sample_note(sample: dict[str, Any]) -> str:
    """The warning a sampled run's card and report open with."""
    what = (f"{sample['value']:.0%} of each source's bytes" if sample["kind"] == "fraction"
            else f"{sample['value']:,} documents per source")
    mix = (f" Its mixture packed {sample['mixture_total_tokens']:,.0f} tokens, the sample's "
           "share of the manifest's total_tokens." if sample.get("mixture_total_tokens")
           else "")
    return (f"**A sample: not for training.** This run read a seeded sample ({what}) to "
            f"tune the manifest; its counts describe the sample, not the corpus.{mix}")


def _sample_banner(stats: dict[str, Any]) -> str:
    """A sampled run says so first: it is for tuning, not for training."""
    if not stats.get("sample"):
        return ""
    text = esc(sample_note(stats["sample"])).replace("**", "")
    style = "background:#fff3cd;border:1px solid #e0c36c;padding:.6em 1em"
    return f"<p class='sample' id='sample' style='{style}'><strong>{text}</strong></p>"


def render_report(stats: dict[str, Any], plots: Sequence[Plot | Note], manifest_yaml: str = "",
                  examples: str = "") -> str:
    """`examples`: the section of removed documents' examples (publish/examples.py)."""
    output = stats["output"]
    merges = merge_lines(stats)
    tokens = (stats.get("profile") or {}).get("tokens")
    overview = [("input documents", stats["input"]["docs"]),
                ("input bytes", stats["input"]["bytes"]),
                ("output documents", output["docs"]), ("output bytes", output["bytes"]),
                ("output shards", stats["shards"])]
    if tokens is not None:
        overview.append(("output tokens", tokens))
    if stats.get("megatron"):
        overview.append(("Megatron tokens", stats["megatron"].get("tokens", 0)))
    by_source = [(s, c["docs"], c["bytes"]) for s, c in output["by_source"].items()]
    by_lang = sorted(output["by_lang"].items(), key=lambda kv: (-kv[1]["bytes"], kv[0]))
    body = [
        f"<h1>{esc(stats['manifest'])}</h1>",
        _sample_banner(stats),
        f"<p class='sub'>lemur-data run report &middot; manifest fingerprint "
        f"<code>{esc(stats['fingerprint'])}</code> &middot; output in "
        f"<code>{esc(output['dir'])}/</code> &middot; stage timings in timings.json</p>",
        "<h2 id='overview'>Overview</h2>", table(["figure", "value"], overview, "overview"),
        "<h2 id='stages'>Stages</h2>", table(STAGE_HEADERS, stage_rows(stats), "stages"),
        "<h2 id='figures'>Figures</h2>", *[figure(p) for p in plots],
        "<h2 id='kept'>Kept documents</h2>",
        table(["source", "docs", "bytes"], by_source, "output-sources"),
        table(["language", "docs", "bytes"], [(lang, c["docs"], c["bytes"]) for lang, c in by_lang],
              "output-langs"),
        _profile_section(stats), _read_section(stats), _mixture_section(stats),
        "<h2 id='stage-details'>Stage details</h2>",
        *[_stage_section(s, merges.get(s["name"], "")) for s in stats.get("stages") or []],
        examples,
        "<h2 id='checks'>Checks</h2>",
        table(["check", "passed"], [(k, str(v)) for k, v in stats.get("checks", {}).items()]),
    ]
    if manifest_yaml:
        body += ["<h2 id='manifest'>Manifest</h2>", f"<pre>{esc(manifest_yaml)}</pre>"]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{esc(stats['manifest'])}: lemur-data report</title><style>{CSS}</style>"
            "</head><body>\n" + "\n".join(b for b in body if b) + "\n</body></html>\n")


def manifest_yaml(run_dir: str) -> str:
    """The run's manifest as YAML, defaults left out (as `lemur-data validate` prints it)."""
    import yaml

    from ..manifest import Manifest

    record = storage.read_json(storage.join(run_dir, "manifest.json"))
    manifest = Manifest.model_validate(record["manifest"])
    return yaml.safe_dump(manifest.model_dump(mode="json", exclude_defaults=True),
                          sort_keys=False)
