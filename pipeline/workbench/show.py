"""One document as the workbench shows it: id, path, fate, reason, detail, its first
lines, and the places a rule acted on, marked (`>>>` ... `<<<` in text, offsets in
JSON)."""

from __future__ import annotations

import json
from typing import Any

from ...stages.explain import Span

FIRST_LINES = 6
LINE_CHARS = 160
CONTEXT_CHARS = 60


def first_lines(text: str, lines: int = FIRST_LINES) -> list[str]:
    out = []
    for line in text.splitlines()[:lines]:
        out.append(line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + "…")
    return out


def marked(text: str, span: Span) -> str:
    """The span in its line's context: `...before >>>span<<< after...` on one line."""
    start, end = max(0, span.start), min(len(text), max(span.end, span.start))
    line = text.count("\n", 0, start) + 1
    before = text[max(0, start - CONTEXT_CHARS):start].split("\n")[-1]
    inside = text[start:end]
    if len(inside) > 2 * CONTEXT_CHARS:
        inside = inside[:CONTEXT_CHARS] + "…" + inside[-CONTEXT_CHARS // 2:]
    after = text[end:end + CONTEXT_CHARS].split("\n")[0]
    body = f"{before}>>>{inside}<<<{after}".replace("\n", "⏎")
    return f"line {line}: {span.label}: {body}"


def example(fate: dict[str, Any], doc: dict[str, Any] | None, spans: list[Span],
            lines: int = FIRST_LINES) -> dict[str, Any]:
    """The JSON form of one example (`--format jsonl`)."""
    text = (doc or {}).get("text") or ""
    return {"id": fate["id"], "path": fate.get("path"), "source": fate.get("source"),
            "lang": fate.get("lang"), "outcome": fate["outcome"], "step": fate["step"],
            "reason": fate.get("reason"), "detail": fate.get("detail"),
            "bytes": len(text.encode()), "first_lines": first_lines(text, lines),
            "locations": [{"start": s.start, "end": s.end, "label": s.label,
                           "line": text.count("\n", 0, max(0, s.start)) + 1,
                           "marked": marked(text, s)} for s in spans]}


def as_text(item: dict[str, Any]) -> str:
    head = f"  {item['id']}  {item.get('path') or '-'}  ({item.get('source')}, " \
           f"{item.get('lang') or 'no language'})"
    out = [head]
    if item["outcome"] == "removed":
        out.append(f"    removed by {item['reason']}" + (f": {item['detail']}"
                                                          if item.get("detail") else ""))
    else:
        out.append(f"    {item['outcome']} (step {item['step']})")
    for location in item["locations"]:
        out.append(f"    at {location['marked']}")
    out += [f"    | {line}" for line in item["first_lines"]]
    return "\n".join(out)


def as_json(item: dict[str, Any]) -> str:
    return json.dumps(item, ensure_ascii=False, sort_keys=True)
