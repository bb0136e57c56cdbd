"""Every source kind of manifests/lemur-90b.yaml, read through the manifest's own reader
configuration with only the Hub root swapped for a local folder laid out and typed as each
dataset card says."""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.stages.ingest import plan_units, read_unit
from tests.realdata import STDLIB, prose_paragraphs, write_jsonl

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "manifests" / "lemur-90b.yaml"
HUB = re.compile(r"^hf://datasets/([^/]+/[^/@]+)/")

# The Stack dedup (bigcode/the-stack-dedup): data/<language>/data-0000N-of-0000M.parquet.
STACK_SCHEMA = pa.schema([
    ("hexsha", pa.string()), ("size", pa.int64()), ("ext", pa.string()), ("lang", pa.string()),
    ("max_stars_repo_path", pa.string()), ("max_stars_repo_name", pa.string()),
    ("max_stars_repo_head_hexsha", pa.string()),
    ("max_stars_repo_licenses", pa.list_(pa.string())), ("max_stars_count", pa.int64()),
    ("content", pa.string()), ("avg_line_length", pa.float64()),
    ("max_line_length", pa.int64()), ("alphanum_fraction", pa.float64()),
])
# RefinedWeb (tiiuae/falcon-refinedweb): data/train-0000N-of-05534-<hash>.parquet.
REFINEDWEB_SCHEMA = pa.schema([
    ("content", pa.string()), ("url", pa.string()), ("timestamp", pa.timestamp("s")),
    ("dump", pa.string()), ("segment", pa.string()),
    ("image_urls", pa.list_(pa.list_(pa.string()))),
])
SETS = ["RedPajamaCommonCrawl", "RedPajamaC4", "RedPajamaGithub", "RedPajamaBook",
        "RedPajamaArXiv", "RedPajamaWikipedia", "RedPajamaStackExchange"]


def stack_dedup(root: Path, folder: str, lang: str) -> int:
    files = sorted((STDLIB / "json").glob("*.py"))
    rows = [{"hexsha": f"{i:040x}", "size": len(f.read_bytes()), "ext": "py", "lang": lang,
             "max_stars_repo_path": str(f.relative_to(STDLIB)),
             "max_stars_repo_name": "python/cpython",
             "max_stars_repo_head_hexsha": "0" * 40,
             "max_stars_repo_licenses": ["PSF-2.0"], "max_stars_count": 10 + i,
             "content": f.read_text(), "avg_line_length": 30.0, "max_line_length": 99,
             "alphanum_fraction": 0.7} for i, f in enumerate(files)]
    path = root / "bigcode/the-stack-dedup/data" / folder / "data-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=STACK_SCHEMA), path)
    return len(rows)


def refinedweb(root: Path) -> int:
    texts = prose_paragraphs()[:30]
    rows = [{"content": t, "url": f"https://docs.python.org/3/reference/{i}.html",
             "timestamp": dt.datetime(2023, 1, 1), "dump": "CC-MAIN-2023-06",
             "segment": "1674764494826.88", "image_urls": []} for i, t in enumerate(texts)]
    path = root / "tiiuae/falcon-refinedweb/data/train-00000-of-05534-b8fc5348cbe4e3ac.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=REFINEDWEB_SCHEMA), path)
    return len(rows)


def slimpajama(root: Path) -> Counter[str]:
    """train/chunk<k>/example_train_<n>.jsonl.zst, every part mixed in each file."""
    texts = prose_paragraphs()[30:100]
    per_set: Counter[str] = Counter()
    for chunk in (1, 2):
        records = []
        for i, text in enumerate(texts[(chunk - 1) * 35: chunk * 35]):
            name = SETS[(i + chunk) % len(SETS)]
            per_set[name] += 1
            records.append({"text": text, "meta": {"redpajama_set_name": name}})
        folder = root / "cerebras/SlimPajama-627B/train" / f"chunk{chunk}"
        folder.mkdir(parents=True, exist_ok=True)
        write_jsonl(folder / "example_train_0.jsonl.zst", records, compress="zst")
    return per_set


def swap_root(node: Any, root: Path) -> Any:
    """`hf://datasets/org/name/...` -> `<root>/org/name/...`; nothing else changes."""
    if isinstance(node, dict):
        return {k: swap_root(v, root) for k, v in node.items()}
    if isinstance(node, list):
        return [swap_root(v, root) for v in node]
    if isinstance(node, str) and HUB.match(node):
        return HUB.sub(lambda m: f"{root}/{m.group(1)}/", node)
    return node


def test_every_lemur_source_reads_its_card_layout(tmp_path: Path) -> None:
    raw = yaml.safe_load(MANIFEST.read_text())
    stack_counts = {}
    for source in raw["sources"]:
        paths = source["reader"]["paths"][0]
        if "the-stack-dedup" in paths:
            folder = paths.split("/data/")[1].split("/")[0]
            stack_counts[source["name"]] = stack_dedup(tmp_path, folder, source["lang"])
    web = refinedweb(tmp_path)
    parts = slimpajama(tmp_path)
    local = copy.deepcopy(raw)
    local["sources"] = [{**s, "reader": swap_root(s["reader"], tmp_path)} for s in raw["sources"]]
    assert [s["reader"] for s in local["sources"]] != [s["reader"] for s in raw["sources"]]
    manifest = parse_manifest(local, str(MANIFEST), MANIFEST.parent)
    kinds = set()
    for spec in manifest.sources:
        kinds.add((spec.reader.type, bool(getattr(spec.reader, "where", None))))
        units = plan_units(spec.reader, spec.info(), manifest.shard.max_docs,
                           int(manifest.shard.max_bytes))
        table = pa.concat_tables(read_unit(spec.reader, spec.info(), u) for u in units)
        assert table.column("reason").null_count == table.num_rows, spec.name
        docs = table.to_pylist()
        if spec.name in stack_counts:
            assert len(docs) == stack_counts[spec.name] > 0
            assert {d["repo"] for d in docs} == {"python/cpython"}
            assert {d["license"] for d in docs} == {"PSF-2.0"} and docs[0]["stars"] == 10
            assert {d["lang"] for d in docs} == {spec.lang} and docs[0]["path"].endswith(".py")
        elif spec.name == "refinedweb":
            assert len(docs) == web and docs[0]["url"].startswith("https://docs.python.org/")
        else:  # the three RedPajama parts out of the same mixed SlimPajama files
            wanted = spec.reader.where.values[0]
            assert len(docs) == parts[wanted] > 0, spec.name
            assert all(d["text"] for d in docs)
    assert kinds == {("parquet", False), ("jsonl", True)}
    assert len(manifest.sources) == len(raw["sources"]) == 15
    assert sum(parts.values()) > sum(parts[p] for p in ("RedPajamaArXiv", "RedPajamaWikipedia",
                                                       "RedPajamaStackExchange"))


@pytest.mark.parametrize("push_down", [True, False])
def test_where_on_parquet_prunes_row_groups_and_skipped_rows_are_no_input(
        tmp_path: Path, push_down: bool) -> None:
    """SlimPajama-like parquet (meta is a struct, as the Hub's parquet conversion types it):
    sorted by part, row groups of other parts are never planned; unsorted, rows are
    filtered after reading. Either way the same documents."""
    texts = prose_paragraphs()[:48]
    names = [SETS[i % 3] for i in range(48)]
    order = sorted(range(48), key=lambda i: names[i]) if push_down else list(range(48))
    table = pa.table({"text": [texts[i] for i in order],
                      "meta": [{"redpajama_set_name": names[i]} for i in order]})
    pq.write_table(table, tmp_path / "part.parquet", row_group_size=8)
    source = {"name": "rp", "kind": "text", "reader": {
        "type": "parquet", "paths": ["part.parquet"],
        "where": {"field": "meta.redpajama_set_name", "in": [SETS[1]]}}}
    manifest = parse_manifest({"name": "t", "sources": [source]}, "m", tmp_path)
    spec = manifest.sources[0]
    units = plan_units(spec.reader, spec.info(), 8, 2**30)
    read = pa.concat_tables(read_unit(spec.reader, spec.info(), u) for u in units)
    assert sorted(read.column("text").to_pylist()) == sorted(
        t for t, n in zip(texts, names, strict=True) if n == SETS[1])
    planned_rows = sum(u.payload["count"] for u in units)
    assert planned_rows == (16 if push_down else 48)  # 2 of 6 groups hold the part
    assert json.dumps(manifest.model_dump(mode="json")["sources"][0]["reader"]["where"]) == (
        '{"field": "meta.redpajama_set_name", "in": ["RedPajamaC4"]}')


def test_the_card_says_what_a_source_filter_took() -> None:
    from lemur_data.pipeline.manifest import load_manifest
    from lemur_data.pipeline.publish.card import _sources

    manifest = load_manifest(MANIFEST).model_dump(mode="json")
    table = _sources(manifest, {"output": {"by_source": {}}, "stages": []})
    row = next(line for line in table.splitlines() if line.startswith("| redpajama-arxiv "))
    assert "where `meta.redpajama_set_name` in `['RedPajamaArXiv']`" in row
    assert "where" not in next(line for line in table.splitlines()
                               if line.startswith("| refinedweb "))


def test_where_on_hf_dataset_and_jsonl_take_the_same_part(tmp_path: Path) -> None:
    parts = slimpajama(tmp_path)
    files = sorted(str(p) for p in tmp_path.rglob("*.jsonl.zst"))
    where = {"field": "meta.redpajama_set_name", "in": ["RedPajamaWikipedia"]}
    texts = {}
    for reader in ({"type": "jsonl", "paths": files, "where": where},
                   {"type": "hf_dataset", "path": "json", "data_files": files, "where": where}):
        manifest = parse_manifest({"name": "t", "sources": [
            {"name": "wiki", "kind": "text", "reader": reader}]}, "m", tmp_path)
        spec = manifest.sources[0]
        table = pa.concat_tables(read_unit(spec.reader, spec.info(), u)
                                 for u in plan_units(spec.reader, spec.info(), 1000, 2**30))
        texts[reader["type"]] = sorted(table.column("text").to_pylist())
    assert texts["jsonl"] == texts["hf_dataset"]
    assert len(texts["jsonl"]) == parts["RedPajamaWikipedia"] > 0
