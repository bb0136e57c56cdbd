"""The dataset card puts data values (languages, licences, paths) into markdown tables:
raw HTML in them (`<!--` hides the rest of the card on the Hub, `<script>`) is escaped
(issue 32)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.realdata import STDLIB
from tests.runs import run_build

HOSTILE_LICENSE = "<script>alert(1)</script>"
HOSTILE_LANG = "<!--"


def test_html_in_data_values_is_escaped_in_the_card(ray_session, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(STDLIB / "json", tree / "json", ignore=shutil.ignore_patterns("__pycache__"))
    raw = {"name": "escape", "shard": {"max_docs": 8},
           "sources": [{"name": "tree", "kind": "code", "lang": HOSTILE_LANG,
                        "reader": {"type": "tree", "root": str(tree),
                                   "license": HOSTILE_LICENSE}}]}
    run = tmp_path / "run"
    run_build(raw, tmp_path, run)
    card = (run / "README.md").read_text()
    body = card.split("\n---\n", 1)[-1]  # after the YAML header
    # fenced code blocks (the embedded manifest) are shown verbatim, never rendered
    body = "".join(part for i, part in enumerate(body.split("```")) if i % 2 == 0)
    assert "<script" not in body and "<!--" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body  # shown, as text
    assert "&lt;!--" in body
