"""Trees as a hostile or careless user leaves them: UTF-16 files with a BOM, files that grow
after planning, the run's own folder inside the tree it reads."""

from __future__ import annotations

import shutil
from pathlib import Path

from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.stages.ingest import plan_units, read_unit
from tests.realdata import STDLIB


def _read(tmp_path: Path, **reader: object) -> dict[str, dict]:
    manifest = parse_manifest({"name": "t", "sources": [
        {"name": "t", "kind": "code",
         "reader": {"type": "tree", "root": "tree", **reader}}]}, "m", tmp_path)
    source = manifest.sources[0]
    return {row["path"]: row for unit in plan_units(source.reader, source.info(), 100, 2**30)
            for row in read_unit(source.reader, source.info(), unit).to_pylist()}


def test_utf16_and_utf32_files_with_a_bom_are_decoded(tmp_path: Path) -> None:
    original = (STDLIB / "json" / "decoder.py").read_text()
    (tmp_path / "tree").mkdir()
    for name, codec in [("le16.py", "utf-16"), ("be16.py", "utf-16-be"), ("le32.py", "utf-32")]:
        data = original.encode(codec)
        if codec == "utf-16-be":
            data = b"\xfe\xff" + data
        assert b"\x00" in data[:100]
        (tmp_path / "tree" / name).write_bytes(data)
    rows = _read(tmp_path)
    for name in ("le16.py", "be16.py", "le32.py"):
        assert rows[name]["reason"] is None, rows[name]["detail"]
        assert rows[name]["text"] == original
        assert rows[name]["lang"] == "Python"


def test_a_broken_utf16_file_keeps_its_text_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    data = "x = 1\n".encode("utf-16") + b"\x00\xd8" + "y = 2\n".encode("utf-16-le")
    (tmp_path / "tree" / "bad.py").write_bytes(data)
    row = _read(tmp_path)["bad.py"]
    assert row["reason"] == "invalid_utf8" and "utf-16-le with a BOM" in row["detail"]
    assert row["text"].startswith("x = 1\n") and row["text"].endswith("y = 2\n")


def test_a_file_growing_after_planning_is_not_read_whole(tmp_path: Path) -> None:
    shutil.copytree(STDLIB / "json", tmp_path / "tree", ignore=shutil.ignore_patterns("__py*"))
    manifest = parse_manifest({"name": "g", "sources": [
        {"name": "t", "kind": "code", "max_doc_bytes": 20000,
         "reader": {"type": "tree", "root": "tree"}}]}, "m", tmp_path)
    source = manifest.sources[0]
    (unit,) = plan_units(source.reader, source.info(), 100, 2**30)
    with open(tmp_path / "tree" / "tool.py", "a") as grow:
        grow.write("#" * 50_000_000)  # 50 MB after planning
    rows = {r["path"]: r for r in read_unit(source.reader, source.info(), unit).to_pylist()}
    assert rows["tool.py"]["reason"] == "too_large" and rows["tool.py"]["text"] == ""
    assert "grew past max_doc_bytes 20000 after planning" in rows["tool.py"]["detail"]
