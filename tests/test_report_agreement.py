"""Every figure of the report agrees with the card and stats.json, also after a merge
(issue 32: after repo_context the waterfall's byte panel showed 16.3 MB out while the
card said 50.4 MB kept, since a merge counts as removed files plus new documents)."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest

from lemur_data.pipeline.publish.plots import waterfall_steps
from lemur_data.pipeline.publish.report import merge_lines, stage_rows
from tests.realdata import STDLIB
from tests.runs import run_build

MERGED = "repo_context:merged"


@pytest.fixture(scope="module")
def merged_run(ray_session, tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("agree")
    tree = base / "tree"
    for package in ("json", "email", "http"):
        shutil.copytree(STDLIB / package, tree / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    raw = {"name": "agree", "shard": {"max_docs": 20},
           "sources": [{"name": "lib", "kind": "code", "lang": "Python",
                        "reader": {"type": "tree", "root": str(tree), "repo_depth": 1}}],
           "stages": [{"exact_dedup": {}},
                      {"repo_context": {"max_bytes": "200KB", "partitions": 2}}]}
    run_build(raw, base, base / "run")
    return base / "run"


def _card_stage_table(card: str) -> list[list[str]]:
    lines = card.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| stage | in docs"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_report_card_and_stats_agree_after_a_merge(merged_run: Path) -> None:
    stats = json.loads((merged_run / "stats.json").read_text())
    card = (merged_run / "README.md").read_text()
    report = html.unescape((merged_run / "report.html").read_text())
    stages = stats["stages"]
    merge = next(s for s in stages if s["name"] == "repo_context")
    assert merge["removed_by_reason"][MERGED]["docs"] > 0  # the run did merge

    for unit in ("docs", "bytes"):
        steps = waterfall_steps(stats, unit)
        assert [s.name for s in steps] == [s["name"] for s in stages]
        assert steps[0].start == stats["input"][unit]
        assert steps[-1].end == stats["output"][unit]  # the output bar is the card's kept
        for step, stage, before in zip(steps[1:], stages[1:], stages, strict=False):
            assert step.start == before["kept"][unit] and step.end == stage["kept"][unit]
        merging = next(s for s in steps if s.name == "repo_context")
        assert MERGED not in merging.removed
        assert merging.merged == merge["removed_by_reason"][MERGED][unit]
    # bytes are conserved by the merge: what went in is within the format's overhead of
    # what came out, where the old waterfall lost the merged files' bytes
    merging = next(s for s in waterfall_steps(stats, "bytes") if s.name == "repo_context")
    assert merging.end >= merging.start - sum(merging.removed.values())

    # the merge is shown as a merge, in the same words, by report and card
    line = merge_lines(stats)["repo_context"]
    files = merge["removed_by_reason"][MERGED]["docs"] + merge["repository_documents"]
    assert f"merged {files:,} documents into {merge['repository_documents']:,}" in line
    sentence = line[0].upper() + line[1:]
    assert sentence in report and sentence in card

    # the card's stage table, the report's stage table and stats.json: the same numbers
    card_rows = _card_stage_table(card)
    report_rows = stage_rows(stats)
    assert len(card_rows) == len(report_rows) == len(stages)
    for card_row, report_row in zip(card_rows, report_rows, strict=True):
        assert card_row[0] == report_row[0]
        assert [int(c.replace(",", "")) for c in card_row[1:7]] == report_row[1:7]
    # the report's overview and the card's headline: the output of stats.json
    out = stats["output"]
    for figure, value in (("output documents", out["docs"]), ("output bytes", out["bytes"])):
        assert re.search(rf"{figure}</t[dh]>\s*<td[^>]*>{value:,}<", report), figure
    assert f"{out['docs']:,}" in card
