"""max_lines, the newcomer walk of docs/development.md: a per-document stage whose card
line, cost and stats figure are its own hooks, on real files of the Python installation."""

from __future__ import annotations

import json
import shutil
import sysconfig
from pathlib import Path

import pyarrow as pa

from lemur_data.pipeline.estimate import estimate
from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.stages.base import ShardContext
from lemur_data.stages.max_lines import MaxLines, MaxLinesParams, line_counts
from lemur_data.stages.storage import documents_table
from tests.runs import run_build

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def test_lines_are_counted_as_an_editor_counts_them() -> None:
    texts = ["", "one", "one\n", "one\ntwo", "one\ntwo\n", "\n\n"]
    assert line_counts(pa.array(texts)).to_pylist() == [0, 1, 1, 2, 2, 2]
    real = (STDLIB / "json" / "decoder.py").read_text()
    assert line_counts(pa.array([real])).to_pylist() == [len(real.splitlines())]


def test_files_over_the_limit_are_removed_with_their_line_count() -> None:
    paths = sorted((STDLIB / "json").glob("*.py"))
    texts = [p.read_text() for p in paths]
    limit = sorted(len(t.splitlines()) for t in texts)[len(texts) // 2]
    docs = documents_table([{"id": p.name, "text": t, "source": "stdlib", "kind": "code",
                             "lang": "Python", "path": p.name} for p, t in zip(paths, texts,
                                                                              strict=True)])
    result = MaxLines(MaxLinesParams(max_lines=limit)).apply(docs, ShardContext("s", "/r", 0))
    expected = ["too_many_lines" if len(t.splitlines()) > limit else None for t in texts]
    assert result.reasons.to_pylist() == expected and any(expected) and not all(expected)
    assert result.details is not None
    assert [d for d in result.details.to_pylist() if d] == [
        str(len(t.splitlines())) for t in texts if len(t.splitlines()) > limit]
    assert result.table.column("lines").to_pylist() == [len(t.splitlines()) for t in texts]


def test_a_build_prints_its_card_line_figure_and_plan_cost(ray_session, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    texts = [p.read_text() for p in sorted((root / "json").glob("*.py"))]
    limit = 300
    raw = {"name": "lines", "sources": [{"name": "tree", "kind": "code", "lang": "Python",
                                         "reader": {"type": "tree", "root": str(root)}}],
           "stages": [{"max_lines": {"max_lines": limit}}]}
    run = tmp_path / "run"
    run_build(raw, tmp_path, run)
    stats = json.loads((run / "stats.json").read_text())
    stage = next(s for s in stats["stages"] if s["name"] == "max_lines")
    over = [t for t in texts if len(t.splitlines()) > limit]
    assert stage["removed"]["docs"] == len(over) > 0
    assert stage["totals"]["lines"] == sum(len(t.splitlines()) for t in texts)
    assert stage["lines_per_document"] == round(stage["totals"]["lines"] / len(texts), 1)
    card = (run / "README.md").read_text()
    assert "### 2. max_lines\n\nremoves documents with more lines than `max_lines`." in card
    assert f"| lines_per_document | {stage['lines_per_document']:,.6g} |" in card
    # plan charges it by its own rate: 1 GB of code at 50 MB/s per core
    manifest = parse_manifest(raw, "lines.yaml", tmp_path)
    cost = next(c for c in estimate(manifest, {"tree": 1_000_000_000}) if c.stage == "max_lines")
    assert abs(cost.core_hours - 1e9 / 1e6 / MaxLines.rate_mb_s[0] / 3600) < 1e-9
