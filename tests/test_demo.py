"""The README's first command: the demo manifest, end to end, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from huggingface_hub import DatasetCard

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_demo_builds_everything_the_readme_promises(tmp_path: Path) -> None:
    run = tmp_path / "demo"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    result = subprocess.run([sys.executable, "-m", "lemur_data.pipeline.cli", "build",
                             "--manifest", "manifests/demo.yaml", "--run-dir", str(run)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "documents per stage" in result.stdout and f"output: {run}" in result.stdout

    manifest = yaml.safe_load((REPO / "manifests" / "demo.yaml").read_text())
    stats = json.loads((run / "stats.json").read_text())
    names = [s["name"] for s in stats["stages"]]
    assert names[0] == "ingest"
    assert names[1:len(manifest["stages"]) + 1] == [next(iter(s)) for s in manifest["stages"]]
    for stage in stats["stages"]:
        assert stage["in"]["docs"] == stage["kept"]["docs"] + stage["removed"]["docs"]
    kinds = {lang for lang in stats["output"]["by_lang"]}
    assert {"Python", "C", "en"} <= kinds  # code and prose both survive
    assert stats["input"]["docs"] > 2000

    card = DatasetCard.load(run / "README.md")
    assert card.data.license and "text-generation" in card.data.task_categories
    report = (run / "report.html").read_text()
    assert "<img" in report and "http://" not in report.replace("http://www.w3.org", "")
    assert (run / "megatron" / "data_args.txt").exists()
    train = run / "launch" / "train.sh"
    assert subprocess.run(["bash", "-n", str(train)]).returncode == 0
