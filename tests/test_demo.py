"""The README's first command: the demo manifest, end to end, as a user runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml
from huggingface_hub import DatasetCard

from lemur_data.stages.registry import STAGE_INFO, stage_hooks
from lemur_data.stages.tokenize.tokenizer import TokenizerConfig, load_tokenizer

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "manifests" / "data" / "notebooks").rglob("*.ipynb"))
BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{76,}={0,2}")


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
    # the card describes every stage, the notebooks stage and repo_context included,
    # with the line of its class (its `about`) and the documents each applied to
    scoped = {"notebooks": "notebooks", "repo_context": "site-packages"}
    for stage in stats["stages"]:
        if stage["name"] in STAGE_INFO:
            assert stage_hooks(stage["name"]).about in card.text
        if stage["name"] in scoped:
            source = scoped[stage["name"]]
            docs = stage["by_source"][source]["in"]["docs"]
            assert f"It applied to the {docs:,} of them from `{source}`" in card.text
    # its notebooks are read from beside the manifest: the card says to copy them along
    assert "Files under `{manifest_dir}` sit beside the manifest" in card.text
    report = (run / "report.html").read_text()
    # self-contained: nothing is loaded from the network (an example's text may quote a
    # URL, as macholib's docstrings do; only attributes that fetch count)
    assert "<img" in report and not re.search(r"""(?:src|href)=["']?https?://""", report)
    assert (run / "megatron" / "data_args.txt").exists()
    check_demo_notebooks(run, stats)
    train = run / "launch" / "train.sh"
    assert subprocess.run(["bash", "-n", str(train)]).returncode == 0


def _notebook_output_payloads() -> list[str]:
    """The start of every non-text output of the demo's notebooks (images, HTML, PDF,
    JavaScript) that no cell source holds too (`Markdown("...")` shows its argument)."""
    payloads = set()
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text()).get("cells", [])
        sources = "".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                          for c in cells)
        for cell in cells:
            for output in cell.get("outputs", []):
                for mime, value in (output.get("data") or {}).items():
                    text = "".join(value) if isinstance(value, list) else str(value)
                    if mime != "text/plain" and len(text) >= 60 and text[:60] not in sources:
                        payloads.add(text[:60])
    return sorted(payloads)


def check_demo_notebooks(run: Path, stats: dict) -> None:
    """The demo's notebooks are converted: every one is kept as a script of its kernel's
    language, and no notebook JSON or output payload is in any kept or packed document."""
    notebooks = next(s for s in stats["stages"] if s["name"] == "notebooks")
    assert notebooks["in"]["docs"] == notebooks["kept"]["docs"] + notebooks["removed"]["docs"]
    assert notebooks["by_source"]["notebooks"]["in"]["docs"] == len(NOTEBOOKS) >= 8
    for folder in sorted((run / "stages").iterdir()):
        table = pa.concat_tables([pq.read_table(p, columns=["source", "lang", "text"])
                                  for p in sorted(folder.glob("*.parquet"))])
        docs = table.filter(pc.equal(table.column("source"), "notebooks")).to_pylist()
        assert len(docs) == len(NOTEBOOKS), folder.name  # no stage removes any of them
        assert {d["lang"] for d in docs} == {"Python", "Julia"}, folder.name
        for doc in docs:
            assert '"cell_type"' not in doc["text"] and not BASE64_RUN.search(doc["text"])
    final = docs
    tokenizer = load_tokenizer(TokenizerConfig())
    packed = []
    for shard in sorted((run / "megatron").glob("*.bin")):
        ids = np.fromfile(shard, dtype=np.uint16)
        ends = np.flatnonzero(ids == tokenizer.eos_id)
        packed += [tokenizer.decode(ids[a:b].tolist())
                   for a, b in zip(np.r_[0, ends[:-1] + 1], ends, strict=True)]
    text = "\n".join(packed)
    assert '"cell_type"' not in text and '"outputs": [' not in text
    payloads = _notebook_output_payloads()
    assert len(payloads) >= 10  # PNG, SVG, PDF, HTML, LaTeX, JavaScript outputs
    assert not [p for p in payloads if p in text]
    # the scripts themselves reach the packed data (those the mix chose: with under one
    # epoch of code:Python it takes a seeded part of the documents)
    assert any(doc["text"].strip()[:200] in text for doc in final)
