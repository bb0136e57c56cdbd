"""`lemur-data plan`'s cost per stage: a stage is charged for the sources it applies to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lemur_data.pipeline.estimate import AVG_DOC_BYTES, PARQUET_RATIO, estimate
from lemur_data.pipeline.manifest import Manifest, parse_manifest
from lemur_data.stages.registry import stage_hooks

# The Stack's notebooks are a few GB beside 50 GB of Python (lemur-90b.yaml's layout)
SIZES = {"stack-jupyter": 2_000_000_000, "stack-python": 50_000_000_000,
         "web": 30_000_000_000}


def manifest(stages: list[dict[str, Any]]) -> Manifest:
    sources = [{"name": name, "kind": "text" if name == "web" else "code",
                "reader": {"type": "parquet", "paths": [f"{name}/*.parquet"]}}
               for name in SIZES]
    return parse_manifest({"name": "cost", "sources": sources, "stages": stages},
                          "cost.yaml", Path("/tmp"))


def hours(size: int, stage: str, kind: str) -> float:
    rate = stage_hooks(stage).rate_mb_s[0 if kind == "code" else 1]
    return size / 1e6 / rate / 3600


def test_a_stage_scoped_to_sources_is_charged_for_those_only() -> None:
    costs = estimate(manifest([{"notebooks": {"sources": ["stack-jupyter"]}},
                               {"langid": {}}]), SIZES)
    notebooks, langid = costs[1], costs[2]
    assert notebooks.stage == "notebooks"
    assert notebooks.input_bytes == SIZES["stack-jupyter"]
    assert notebooks.core_hours == pytest.approx(hours(SIZES["stack-jupyter"], "notebooks",
                                                       "code"))
    # unscoped: everything, each kind at its rate
    assert langid.input_bytes == sum(SIZES.values())
    assert langid.core_hours == pytest.approx(
        hours(SIZES["stack-jupyter"] + SIZES["stack-python"], "langid", "code")
        + hours(SIZES["web"], "langid", "text"))


def test_kinds_scope_and_one_stage_listed_twice() -> None:
    costs = estimate(manifest([{"quality": {"kinds": ["text"]}},
                               {"quality": {"kinds": ["code"], "sources": ["stack-python"]}},
                               {"minhash": {"sources": ["web"], "partitions": 4}}]), SIZES)
    text, code, minhash = costs[1:4]
    assert (text.input_bytes, code.input_bytes) == (SIZES["web"], SIZES["stack-python"])
    assert text.core_hours == pytest.approx(hours(SIZES["web"], "quality", "text"))
    assert code.core_hours == pytest.approx(hours(SIZES["stack-python"], "quality", "code"))
    # MinHash's signatures and memory follow its scope; the step's kept shards hold
    # every document, so the written bytes do not
    docs = SIZES["web"] / AVG_DOC_BYTES
    written = sum(SIZES.values()) * PARQUET_RATIO
    assert minhash.disk_bytes == int(docs * 256 * 8 + written)
    assert minhash.worker_memory_mb == pytest.approx(
        costs[0].worker_memory_mb + docs * 256 * 8 / 4 / 1e6)
