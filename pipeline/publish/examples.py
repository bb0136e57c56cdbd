"""The report's examples: a few documents per stage and reason, as `lemur-data inspect`
chooses them (seeded by the run's seed), so a reviewer sees what each rule drops without
a terminal. Each is HTML-escaped, cut to its first lines, folded in a <details>, and
redacted like the kept documents (emails, keys, IPs): the report is published, and a
document removed before the PII stage still holds what that stage would have taken out.
"""

from __future__ import annotations

from typing import Any

from ...filters.pii.find import find_pii
from ...filters.pii.redact import redact
from ..workbench.inspect import examples, pick
from ..workbench.rundir import NotARunError, RunFolder

PER_REASON = 3
LINES = 8


def _redacted(text: str) -> str:
    spans = find_pii(text)
    return redact(text, spans) if spans else text


def removed_examples(run_dir: str, per_reason: int = PER_REASON,
                     lines: int = LINES) -> dict[str, tuple[int, list[dict[str, Any]]]]:
    """{reason: (documents it removed, examples)}, reasons sorted."""
    try:
        run = RunFolder(run_dir)
        rows = [r for r in run.fates.to_pylist() if r["outcome"] == "removed"]
    except (NotARunError, OSError, IndexError):
        return {}
    chosen = pick(rows, ["reason"], per_reason, run.seed)
    shown = {item["id"]: item for item in
             examples(run, [r for _, members in chosen.values() for r in members], lines)}
    out = {}
    for (reason,), (count, members) in chosen.items():
        items = []
        for row in members:
            item = dict(shown[row["id"]])
            item["first_lines"] = [_redacted(line) for line in item["first_lines"]]
            item["locations"] = [{**loc, "marked": _redacted(loc["marked"])}
                                 for loc in item["locations"]]
            if item.get("detail"):
                item["detail"] = _redacted(item["detail"])
            items.append(item)
        out[reason] = (count, items)
    return out


def examples_section(found: dict[str, tuple[int, list[dict[str, Any]]]], esc: Any) -> str:
    """The report's section: one <details> per reason, one <pre> per example."""
    if not found:
        return ""
    out = ["<h2 id='examples'>Examples of removed documents</h2>",
           "<p class='sub'>A few documents per reason, chosen by a seeded hash of their ids "
           "(<code>lemur-data inspect --run-dir RUN --reason R</code> shows more); first "
           "lines only, personal data redacted.</p>"]
    for reason, (count, items) in found.items():
        out.append(f"<details class='examples' data-reason='{esc(reason)}'><summary>"
                   f"<code>{esc(reason)}</code>: {count:,} document{'s' if count != 1 else ''}, "
                   f"{len(items)} shown"
                   "</summary>")
        for item in items:
            head = (f"{esc(item.get('path') or item['id'])} &middot; {esc(item.get('source'))}"
                    f" &middot; {esc(item.get('lang') or 'no language')} &middot; "
                    f"<code>{esc(item['id'])}</code>")
            detail = f"<br>{esc(item['detail'])}" if item.get("detail") else ""
            marks = "".join(f"<br>at {esc(loc['marked'])}" for loc in item["locations"])
            body = esc("\n".join(item["first_lines"])) or "(empty document)"
            out.append(f"<div class='example' data-id='{esc(item['id'])}'><p>{head}{detail}"
                       f"{marks}</p><pre>{body}</pre></div>")
        out.append("</details>")
    return "\n".join(out)
