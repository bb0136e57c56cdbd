"""Helpers to run builds in tests and compare run folders byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from lemur_data.pipeline.build import BuildResult, build
from lemur_data.pipeline.manifest import parse_manifest

# Files whose content legitimately differs between runs.
NONDETERMINISTIC = {"timings.json"}


def run_build(raw: dict[str, Any], base_dir: Path, run_dir: Path, workers: int | None = None,
              ) -> BuildResult:
    manifest = parse_manifest(raw, "test-manifest", base_dir)
    return build(manifest, str(run_dir), workers=workers, progress="none")


def drop_orphan_stages(raw: dict[str, Any]) -> dict[str, Any]:
    """`raw` (a manifest as YAML gives it) without the stages scoped (`sources:`) to
    sources it no longer has, and without those names in partly matching scopes: what a
    test or benchmark that keeps only some of the demo's sources must do, since a stage
    naming a missing source is a manifest error."""
    names = {s["name"] for s in raw["sources"]}
    stages = []
    for entry in raw.get("stages") or []:
        (name, params), = entry.items()
        scope = (params or {}).get("sources")
        if scope is None:
            stages.append(entry)
        elif names & set(scope):
            stages.append({name: {**params, "sources": [s for s in scope if s in names]}})
    return {**raw, "stages": stages}


def digest(run_dir: Path) -> dict[str, str]:
    """sha256 of every output file of a run, by path relative to the run folder."""
    return {str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file() and p.name not in NONDETERMINISTIC}


def count_rows(folder: Path) -> int:
    return sum(pq.read_metadata(p).num_rows for p in folder.rglob("*.parquet"))


def removed_reasons(run_dir: Path) -> list[str]:
    reasons: list[str] = []
    for path in sorted((run_dir / "removed").rglob("*.parquet")):
        reasons += pq.read_table(path, columns=["reason"]).column("reason").to_pylist()
    return reasons
