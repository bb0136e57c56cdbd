"""The contamination report: which benchmarks were checked, how, and what each item removed.

Built from the stage's parameters and its removed documents' details
(`mbpp:62 solution`), counted per item by the runner, so a resumed run reports the
same. stats.json carries it as the decontaminate stage's `contamination`; the dataset
card shows it as a table.
"""

from __future__ import annotations

from typing import Any

from ..hooks import markdown_table
from .benchmarks import BENCHMARKS

# How each built-in benchmark's items are matched (see filters/decontaminate.py).
METHODS = {
    "humaneval": "prompt (from its first definition) and canonical solution as "
                 "whitespace-free substrings",
    "mbpp": "solution as a whitespace-free substring (under 50 characters: when it defines "
            "a name and the background code lacks it); task text as word 13-grams",
    "gsm8k": "question, answer, and answer without its calculator annotations and #### line as "
             "word 13-grams",
    "mmlu": "question as word 13-grams; a question under 13 words together with its "
            "choices, labels (A. / (a) / 1.) ignored",
    "bbh": "input as word 13-grams",
}


def _source(entry: str | dict[str, Any]) -> tuple[str, str, str]:
    """(name, where its items come from, how they are matched) for one `benchmarks` entry."""
    if isinstance(entry, str):
        entry = {"name": entry}
    name = entry["name"]
    if name not in BENCHMARKS:
        how = ", ".join(
            [f"{f} as whitespace-free substrings" for f in entry.get("code") or []]
            + [f"{f} as word 13-grams" for f in entry.get("text") or []]
            + ([f"{entry['text'][0]} with its {entry['choices']} as word 13-grams"]
               if entry.get("choices") else []))
        return name, f"file {entry.get('file')}", how
    benchmark = BENCHMARKS[name]
    if entry.get("file"):
        where = f"file {entry['file']}"
    else:
        where = " or ".join(([f"package {benchmark.pip_name}"] if benchmark.pip_name else [])
                            + (["the Hub " + benchmark.hub_id] if entry.get("hub", True)
                               else []))
    return name, where, METHODS[name]


def contamination(params: dict[str, Any], removed_by_detail: dict[str, int]) -> dict[str, Any]:
    """Per benchmark checked: its source and method, the items found, the documents
    removed, and the documents removed per item."""
    per_item: dict[str, dict[str, int]] = {}
    for detail, docs in removed_by_detail.items():
        label = detail.rsplit(" ", 1)[0]  # "mbpp:62 solution" -> "mbpp:62"
        benchmark, _, item = label.partition(":")
        counts = per_item.setdefault(benchmark, {})
        counts[item] = counts.get(item, 0) + docs
    report: dict[str, Any] = {}
    for entry in params.get("benchmarks") or []:
        name, where, how = _source(entry)
        items = dict(sorted(per_item.get(name, {}).items()))
        report[name] = {"source": where, "method": how, "items_found": len(items),
                        "documents_removed": sum(items.values()),
                        "documents_per_item": items}
    return report


def card_text(report: dict[str, Any]) -> str:
    """The card's chapter: which benchmarks were checked, how, and what was found
    (stats.json has every item)."""
    rows = [[name, b["source"], b["method"], b["items_found"], b["documents_removed"]]
            for name, b in report.items()]
    return ("Documents holding an item of these benchmarks were removed; the documents "
            "removed per item are in `stats.json` (`stages[].contamination`) and the "
            "documents themselves in `removed/`.\n\n"
            + markdown_table(["benchmark", "items from", "matched as", "items found",
                              "documents removed"], rows))
