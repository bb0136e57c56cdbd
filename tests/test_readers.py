"""Readers on real files: columns, stable ids, deterministic units."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.stages.ingest import plan_units, read_unit
from realdata import PURELIB, STDLIB, prose_paragraphs, stack_parquet, stdlib_files, write_jsonl


def units_and_tables(source: dict, tmp_path: Path, max_docs: int = 1000,
                     max_bytes: int = 2**30) -> tuple[list, pa.Table]:
    manifest = parse_manifest({"name": "t", "sources": [source]}, "m", tmp_path)
    spec = manifest.sources[0]
    units = plan_units(spec.reader, spec.info(), max_docs, max_bytes)
    tables = [read_unit(spec.reader, spec.info(), u) for u in units]
    return units, pa.concat_tables(tables)


def test_parquet_with_stack_columns_and_row_range_units(tmp_path: Path) -> None:
    files = stdlib_files("email", 40)
    n = len(files)
    assert n >= 20
    original = stack_parquet(tmp_path / "stack.parquet", files)
    source = {"name": "stack-python", "kind": "code", "lang": "Python",
              "reader": {"type": "parquet", "paths": ["*.parquet"]},
              "columns": {"text": "content", "path": "max_stars_repo_path",
                          "repo": "max_stars_repo_name", "stars": "max_stars_count",
                          "license": "max_stars_repo_licenses"}}
    units, table = units_and_tables(source, tmp_path, max_docs=7)
    assert len(units) == -(-n // 7)  # units of 7 rows, cut inside row groups of 16
    assert table.column("text").to_pylist() == original.column("content").to_pylist()
    assert table.column("license")[0].as_py() == "PSF-2.0,0BSD"
    assert table.column("stars").to_pylist() == list(range(1, n + 1))
    assert set(table.column("lang").to_pylist()) == {"Python"}
    empty = sum(1 for f in files if not f.read_text().strip())
    assert table.column("reason").to_pylist().count("empty") == empty
    assert table.column("reason").null_count == n - empty
    ids = table.column("id").to_pylist()
    assert len(set(ids)) == n
    _, again = units_and_tables(source, tmp_path, max_docs=13)
    assert again.column("id").to_pylist() == ids  # ids do not depend on shard size


@pytest.mark.parametrize("compress", [None, "gz", "zst"])
def test_jsonl_plain_and_compressed(tmp_path: Path, compress: str | None) -> None:
    paragraphs = prose_paragraphs()[:50]
    suffix = {None: "", "gz": ".gz", "zst": ".zst"}[compress]
    write_jsonl(tmp_path / f"web.jsonl{suffix}",
                [{"content": t, "meta": {"url": f"https://docs.python.org/{i}"}}
                 for i, t in enumerate(paragraphs)], compress)
    source = {"name": "web", "kind": "text", "reader": {"type": "jsonl", "paths": ["web.*"]},
              "columns": {"text": "content", "url": "meta.url"}}
    _, table = units_and_tables(source, tmp_path)
    assert table.column("text").to_pylist() == paragraphs
    assert table.column("url")[3].as_py() == "https://docs.python.org/3"


def test_hf_datasets_reader_on_local_files(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    paragraphs = prose_paragraphs()[:30]
    write_jsonl(tmp_path / "a.jsonl", [{"text": t} for t in paragraphs[:15]])
    write_jsonl(tmp_path / "b.jsonl", [{"text": t} for t in paragraphs[15:]])
    source = {"name": "web", "kind": "text",
              "reader": {"type": "hf_dataset", "path": "json",
                         "data_files": [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]}}
    units, table = units_and_tables(source, tmp_path)
    assert len(units) == 2
    assert sorted(table.column("text").to_pylist()) == sorted(paragraphs)


def test_tree_languages_repos_and_licenses(tmp_path: Path) -> None:
    root = tmp_path / "repos"
    shutil.copytree(STDLIB / "json", root / "jsonlib" / "json",
                    ignore=shutil.ignore_patterns("__pycache__"))
    licenses = sorted(PURELIB.glob("*.dist-info/licenses/LICENSE*")) or sorted(
        PURELIB.glob("*.dist-info/LICENSE*"))
    mit = next(p for p in licenses if "Permission is hereby granted" in p.read_text())
    shutil.copy(mit, root / "jsonlib" / "LICENSE")
    tool = root / "tools"
    tool.mkdir()
    shutil.copy(STDLIB / "venv" / "scripts" / "common" / "activate", tool / "activate")
    (tool / "run").write_text("#!/usr/bin/env python3\n" + (STDLIB / "this.py").read_text())
    (tool / "header.h").write_text((Path(__file__).parent / "data_cpp_header.txt").read_text()
                                   if (Path(__file__).parent / "data_cpp_header.txt").exists()
                                   else "namespace demo {\nclass A { public: int x; };\n}\n")
    source = {"name": "repos", "kind": "code",
              "reader": {"type": "tree", "root": str(root), "repo_depth": 1}}
    _, table = units_and_tables(source, tmp_path)
    rows = {r["path"]: r for r in table.to_pylist()}
    assert rows["jsonlib/json/decoder.py"]["lang"] == "Python"
    assert rows["jsonlib/json/decoder.py"]["repo"] == "jsonlib"
    assert rows["jsonlib/json/decoder.py"]["license"] == "MIT"
    assert rows["tools/run"]["lang"] == "Python"  # by shebang
    assert rows["tools/header.h"]["lang"] == "C++"  # .h resolved by content


def test_python_object_reader_reads_help_topics(tmp_path: Path) -> None:
    source = {"name": "topics", "kind": "text", "lang": "en",
              "reader": {"type": "python_object", "object": "pydoc_data.topics:topics"}}
    units, table = units_and_tables(source, tmp_path, max_docs=50)
    assert len(units) > 1
    assert table.num_rows == len(prose_paragraphs())
