"""`sample:` / `build --sample`: a seeded subset drawn by input unit, then by row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from lemur_data.pipeline.cli import main
from lemur_data.pipeline.manifest import ManifestError, load_manifest, parse_manifest
from lemur_data.pipeline.planner import list_units
from lemur_data.pipeline.sample import SampledUnit, parse_sample, sample_units
from lemur_data.stages.ingest import read_unit
from tests.conftest import STDLIB, demo_manifest, write_manifest
from tests.runs import digest

REPO = Path(__file__).resolve().parents[1]


def _stdlib_manifest(sample: float | int | None = None) -> dict:
    raw = {"name": "s", "seed": 7, "shard": {"max_docs": 8},
           "sources": [{"name": "email", "kind": "code",
                        "reader": {"type": "tree", "root": str(STDLIB / "email")}},
                       {"name": "json", "kind": "code",
                        "reader": {"type": "tree", "root": str(STDLIB / "json")}}]}
    if sample is not None:
        raw["sample"] = sample
    return raw


def test_sample_values_parse_and_bad_ones_name_the_key() -> None:
    assert parse_sample("0.1") == 0.1 and parse_sample("500") == 500
    assert parse_sample("3.0") == 3
    for bad in ("0", "1.5", "-0.2", "ten"):
        with pytest.raises(ValueError):
            parse_sample(bad)
    with pytest.raises(ManifestError, match="sample"):
        parse_manifest(_stdlib_manifest(1.5))


def test_a_full_manifest_keeps_its_fingerprint_and_a_sample_changes_it() -> None:
    full = parse_manifest(_stdlib_manifest())
    assert "sample" not in full.model_dump(mode="json")
    sampled = parse_manifest(_stdlib_manifest(0.25))
    assert sampled.fingerprint() != full.fingerprint()
    assert parse_manifest(_stdlib_manifest(0.25)).fingerprint() == sampled.fingerprint()


def test_units_then_rows_are_drawn_by_seed_and_read_about_the_fraction() -> None:
    manifest = parse_manifest(_stdlib_manifest(0.3))
    full = list_units(manifest, full=True)
    chosen = list_units(manifest)
    assert chosen == sample_units(full, 0.3, manifest.seed)  # the same on every call
    email = full["email"]
    assert len(email) > 1 and 0 < len(chosen["email"]) < len(email)  # by unit first...
    total_docs = total_bytes = 0
    read_docs = read_bytes = 0
    for source in manifest.sources:
        for unit in full[source.name]:
            table = read_unit(source.reader, source.info(), unit)
            total_docs += table.num_rows
            total_bytes += sum(len(t.encode()) for t in table.column("text").to_pylist())
        for unit in chosen[source.name]:
            assert isinstance(unit, SampledUnit)
            table = unit.keep(read_unit(source.reader, source.info(), unit))  # ...then rows
            read_docs += table.num_rows
            read_bytes += sum(len(t.encode()) for t in table.column("text").to_pylist())
    assert 0.15 < read_bytes / total_bytes < 0.5, (read_bytes, total_bytes)
    assert 0.1 < read_docs / total_docs < 0.5
    other_seed = sample_units(full, 0.3, manifest.seed + 1)
    assert other_seed != chosen


def test_n_documents_per_source_are_shared_out_over_the_units() -> None:
    manifest = parse_manifest(_stdlib_manifest(25))
    for source in manifest.sources:
        units = list_units(manifest)[source.name]
        total = sum(read_unit(source.reader, source.info(), u).num_rows
                    for u in list_units(manifest, full=True)[source.name])
        kept = sum(u.keep(read_unit(source.reader, source.info(), u)).num_rows for u in units)
        assert kept == min(25, total), source.name  # json has fewer: all of them
    ids = pa.table({"id": [f"{i:032x}" for i in range(100)]})
    unit = SampledUnit("x", 0, {}, docs_hint=100, quota=10, seed=3)
    picked = unit.keep(ids).column("id").to_pylist()
    assert len(picked) == 10 and picked == sorted(picked)  # rows keep their order
    assert picked == unit.keep(ids.take(list(range(99, -1, -1)))).column("id").to_pylist()[::-1]
    for share, rows in ((0.1, 100), (0.1, 12), (0.1, 3), (0.25, 10)):
        part = SampledUnit("x", 0, {}, docs_hint=rows, share=share, seed=3)
        kept = part.keep(ids.slice(0, rows)).num_rows
        assert kept == max(1, int(share * rows + 0.5)), (share, rows, kept)  # >= 1 a unit


def test_plan_says_what_a_sample_reads(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = write_manifest(tmp_path, _stdlib_manifest())
    assert main(["plan", "-m", str(path), "--sample", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "sample 0.2 (seed 7; a sample: not for training), reads:" in out
    assert "run dir runs/s-sample-0.2" in out
    assert " units, 20.0% of their rows" in out or "of their rows" in out


@pytest.mark.slow
def test_demo_sample_is_the_same_for_any_worker_count_and_says_so(
        demo_sample: Path, tmp_path: Path) -> None:
    """Acceptance: --sample 0.1 on the demo reads ~10% of each source, the same output for
    1 and 2 workers; report and card say it is a sample; a full build is refused there."""
    stats = json.loads((demo_sample / "stats.json").read_text())
    manifest = load_manifest(REPO / "manifests" / "demo.yaml")
    full = list_units(manifest, full=True)
    ingest = stats["stages"][0]
    for source in manifest.sources:
        listed = sum(u.bytes_hint for u in full[source.name])
        listed_docs = sum(u.docs_hint for u in full[source.name])
        seen = ingest["by_source"].get(source.name, {"in": {"bytes": 0, "docs": 0}})["in"]
        if listed_docs >= 100:  # a source of a few documents samples a few documents
            assert 0.04 < seen["bytes"] / listed < 0.25, (source.name, seen, listed)
            assert 0.04 < seen["docs"] / listed_docs < 0.25, (source.name, seen, listed_docs)
        assert seen["docs"] >= 1, source.name  # but at least one (the notebooks: 12)
    assert stats["sample"]["note"] == "a sample: not for training"
    # the mix packs the sample's share of total_tokens (each component to the token)
    sampled = demo_manifest()
    assert sampled.mixture is not None and isinstance(sampled.sample, float)
    share = sampled.mixture.total_tokens * sampled.sample
    assert stats["sample"]["mixture_total_tokens"] == pytest.approx(share)
    shards = json.loads((demo_sample / "megatron" / "summary.json").read_text())["shards"]
    assert abs(sum(s["tokens"] for s in shards) - share) <= len(shards), shards
    train = (demo_sample / "launch" / "train.sh").read_text()
    assert f"ceil({round(share)} tokens" in train  # training, were it run, reads those
    assert f"Its mixture packed {round(share):,} tokens" in (demo_sample / "README.md").read_text()
    assert "A sample: not for training." in (demo_sample / "README.md").read_text()
    assert "A sample: not for training." in (demo_sample / "report.html").read_text()

    # the same sample with one worker, in the same folder (its paths are in the output)
    from lemur_data.pipeline.build import build

    moved = tmp_path / "two-workers"
    shutil.copytree(demo_sample, moved)
    shutil.rmtree(demo_sample)
    try:
        build(demo_manifest(), str(demo_sample), workers=1, progress="none")
        assert digest(demo_sample) == digest(moved)
    finally:  # other tests read the folder: leave the two-worker one there
        shutil.rmtree(demo_sample)
        shutil.copytree(moved, demo_sample)

    # a full build of the demo refuses the sample's folder (another fingerprint)
    assert main(["build", "-m", str(REPO / "manifests" / "demo.yaml"), "--run-dir",
                 str(demo_sample), "--progress", "none"]) == 2
