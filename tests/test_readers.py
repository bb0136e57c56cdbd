"""Readers on real files: columns, stable ids, deterministic units."""

from __future__ import annotations

import gzip
import hashlib
import inspect
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.stages.ingest import READERS, make_reader, plan_units, read_unit
from lemur_data.stages.readers import compressed
from lemur_data.stages.readers.common import Reader, ReaderError, document_id
from tests.realdata import (
    PURELIB,
    STDLIB,
    prose_paragraphs,
    stack_parquet,
    stdlib_files,
    write_jsonl,
)


def test_every_reader_keeps_the_contract() -> None:
    """Each manifest reader type is a concrete `Reader` whose Params' `type` is its name,
    and `make_reader` builds it from its validated parameters."""
    assert sorted(READERS) == ["files", "hf_dataset", "jsonl", "parquet", "python_object",
                               "stack_v2", "tree"]
    for name, cls in READERS.items():
        assert issubclass(cls, Reader) and not inspect.isabstract(cls)
        assert cls.type_name() == name
    manifest = parse_manifest({"name": "t", "sources": [
        {"name": "topics", "kind": "text",
         "reader": {"type": "python_object", "object": "pydoc_data.topics:topics"}}]})
    spec = manifest.sources[0]
    reader = make_reader(spec.reader, spec.info())
    assert type(reader) is READERS["python_object"]
    assert reader.params is spec.reader and reader.where == "source 'topics'"


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
    # Row groups of 16 rows are over the limit: each is cut into 3 even ranges (5, 5, 6);
    # no range spans two groups, since a range is decoded from its group's start.
    ranges = [(u.payload["start"], u.payload["count"]) for u in units]
    assert [start for start, _ in ranges] == list(
        itertools.accumulate([count for _, count in ranges[:-1]], initial=0))
    assert all(start // 16 == (start + count - 1) // 16 for start, count in ranges)
    for group in range(0, n, 16):
        counts = [count for start, count in ranges if start // 16 == group // 16]
        assert len(counts) == -(-min(16, n - group) // 7)
        assert max(counts) <= 7 and max(counts) - min(counts) <= 1
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


def test_parquet_units_pack_whole_row_groups(tmp_path: Path) -> None:
    files = stdlib_files("json", 30) + stdlib_files("email", 40)
    path = tmp_path / "small-groups.parquet"
    original = stack_parquet(path, files, row_group_size=5)
    meta = pq.ParquetFile(path).metadata
    source = {"name": "s", "kind": "code", "reader": {"type": "parquet", "paths": ["*.parquet"]},
              "columns": {"text": "content"}}
    units, table = units_and_tables(source, tmp_path, max_docs=12)
    # Two whole groups of 5 per unit (a third would pass 12 rows); the planned bytes are
    # the groups' own sizes.
    assert {u.payload["start"] % 10 for u in units} == {0}
    assert [u.payload["count"] for u in units[:-1]] == [10] * (len(units) - 1)
    assert sum(u.bytes_hint for u in units) == sum(
        meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    assert table.column("text").to_pylist() == original.column("content").to_pylist()
    # A byte limit of the largest group's size: groups are packed by bytes, never cut.
    largest = max(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    units, table = units_and_tables(source, tmp_path, max_docs=1000, max_bytes=largest)
    assert all(u.payload["start"] % 5 == 0 and u.bytes_hint <= largest for u in units)
    assert len(units) > 45 // 12
    assert table.column("text").to_pylist() == original.column("content").to_pylist()


def _stdlib_sources(limit: int = 800) -> list[Path]:
    return sorted(p for p in STDLIB.rglob("*.py")
                  if not {"site-packages", "test", "tests"} & set(p.parts))[:limit]


_PEAK_CHILD = """
import hashlib, json, sys
from pathlib import Path
import pyarrow as pa
from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.stages.ingest import plan_units, read_unit
source, base, index, max_docs = json.loads(sys.argv[1])
spec = parse_manifest({"name": "t", "sources": [source]}, "m", Path(base)).sources[0]
unit = plan_units(spec.reader, spec.info(), max_docs, 2**40)[index]
texts = read_unit(spec.reader, spec.info(), unit).column("text").to_pylist()
print(json.dumps([pa.default_memory_pool().max_memory(),
                  hashlib.sha256(json.dumps(texts).encode()).hexdigest()]))
"""


def _read_peak(source: dict, tmp_path: Path, index: int, max_docs: int) -> tuple[int, str]:
    """Peak pyarrow memory of a fresh process reading one unit, and its texts' digest."""
    args = json.dumps([source, str(tmp_path), index, max_docs])
    out = subprocess.run([sys.executable, "-c", _PEAK_CHILD, args], check=True,
                         capture_output=True, text=True).stdout
    peak, digest = json.loads(out.splitlines()[-1])
    return peak, digest


def _digest(texts: list[str]) -> str:
    return hashlib.sha256(json.dumps(texts).encode()).hexdigest()


def test_parquet_unit_inside_a_large_row_group_streams_batch_rows(tmp_path: Path) -> None:
    files = _stdlib_sources()
    original = stack_parquet(tmp_path / "big.parquet", files)
    # One row group for the whole file, as Hub parquet often has more rows per group than a
    # shard; small pages, since a page is the least a reader can decode.
    pq.write_table(original, tmp_path / "big.parquet", row_group_size=len(files),
                   data_page_size=64 * 1024, write_batch_size=16)
    group_bytes = original.column("content").nbytes
    source = {"name": "stack", "kind": "code",
              "reader": {"type": "parquet", "paths": ["big.parquet"], "batch_rows": 8},
              "columns": {"text": "content", "path": "max_stars_repo_path"}}
    units, _ = units_and_tables(source, tmp_path, max_docs=40)
    middle = len(units) // 2
    start, count = units[middle].payload["start"], units[middle].payload["count"]
    assert start > 0 and count <= 40
    expected = _digest(original.column("content").to_pylist()[start:start + count])
    peak, digest = _read_peak(source, tmp_path, middle, max_docs=40)
    assert digest == expected
    # Reading whole row groups (the old reader) held more than the group's text; now a
    # 40-row unit holds its rows, one batch, a page and the 1 MiB stream buffer.
    assert peak < group_bytes / 2, (peak, group_bytes)
    source["reader"]["batch_rows"] = len(files)
    whole_batch_peak, digest = _read_peak(source, tmp_path, middle, max_docs=40)
    assert digest == expected  # batch size changes memory, never the documents
    assert whole_batch_peak > group_bytes > 2 * peak  # batch_rows is what bounds it
    _, everything = units_and_tables(source, tmp_path, max_docs=40)
    assert everything.column("text").to_pylist() == original.column("content").to_pylist()


def test_parquet_corrupt_page_quarantines_only_the_units_reading_it(tmp_path: Path) -> None:
    files = _stdlib_sources(300)
    path = tmp_path / "stack.parquet"
    table = stack_parquet(path, files)
    pq.write_table(table, path, row_group_size=len(files), data_page_size=16 * 1024,
                   write_batch_size=16)
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(0)  # content
    first = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    raw = bytearray(path.read_bytes())
    at = first + int(chunk.total_compressed_size * 0.9)
    raw[at:at + 4096] = bytes(range(256)) * 16  # garbage over pages near the chunk's end
    path.write_bytes(bytes(raw))
    source = {"name": "stack", "kind": "code", "lang": "Python",
              "reader": {"type": "parquet", "paths": ["stack.parquet"], "batch_rows": 16},
              "columns": {"text": "content"}}
    _, read = units_and_tables(source, tmp_path, max_docs=50)
    # Units ending before the damaged pages read in full (whole-group reads lost them all);
    # the ones reaching them stand as one quarantine record each.
    damaged = pc.fill_null(pc.equal(read.column("reason"), "unreadable_file"), False)
    good, bad = read.filter(pc.invert(damaged)), read.filter(damaged)
    assert good.num_rows >= 150 and good.num_rows % 50 == 0
    assert good.column("text").to_pylist() == table.column("content").to_pylist()[:good.num_rows]
    assert bad.num_rows == (len(files) - good.num_rows) // 50
    assert bad.column("detail")[0].as_py().startswith(f"rows {good.num_rows}+: ")
    assert "snappy" in bad.column("detail")[0].as_py().lower()


@pytest.mark.parametrize("compress", [None, "gz", "zst"])
def test_jsonl_plain_and_compressed(tmp_path: Path, compress: str | None) -> None:
    paragraphs = prose_paragraphs()[:50]
    suffix = {None: "", "gz": ".gz", "zst": ".zst"}[compress]
    write_jsonl(tmp_path / f"web.jsonl{suffix}",
                [{"content": t, "meta": {"url": f"https://docs.python.org/{i}"}}
                 for i, t in enumerate(paragraphs)], compress)
    source = {"name": "web", "kind": "text", "reader": {"type": "jsonl", "paths": ["web.*"]},
              "columns": {"text": "content", "url": "meta.url"}}
    units, table = units_and_tables(source, tmp_path)
    assert table.column("text").to_pylist() == paragraphs
    assert table.column("url")[3].as_py() == "https://docs.python.org/3"
    # The planned size is the decompressed one (exact under 256 KiB compressed).
    plain = sum(len(json.dumps({"content": t, "meta": {"url": f"https://docs.python.org/{i}"}})
                    .encode()) + 1 for i, t in enumerate(paragraphs))
    assert abs(units[0].bytes_hint - plain) <= 1


def _compressed_copies(folder: Path, plain: bytes) -> dict[str, Path]:
    """`plain` as gzip (two members, as `cat a.gz b.gz` makes), zstd stating its size
    (the CLI's default), zstd of several frames that state no size (a streaming writer),
    bz2 and xz."""
    import bz2
    import lzma

    import zstandard

    cut = len(plain) // 3
    copies = {"gz": folder / "code.jsonl.gz", "zst": folder / "code.jsonl.zst",
              "zst frames": folder / "frames.jsonl.zst", "bz2": folder / "code.jsonl.bz2",
              "xz": folder / "code.jsonl.xz"}
    copies["bz2"].write_bytes(bz2.compress(plain))
    copies["xz"].write_bytes(lzma.compress(plain))
    copies["gz"].write_bytes(gzip.compress(plain[:cut], mtime=0)
                             + gzip.compress(plain[cut:], mtime=0))
    copies["zst"].write_bytes(zstandard.ZstdCompressor(level=3).compress(plain))
    unsized = zstandard.ZstdCompressor(level=3, write_content_size=False)
    with copies["zst frames"].open("wb") as raw:
        for part in (plain[:cut], plain[cut:2 * cut], plain[2 * cut:]):
            with unsized.stream_writer(raw, closefd=False) as out:
                out.write(part)
    return copies


def test_compressed_jsonl_is_cut_by_its_decompressed_bytes(tmp_path: Path) -> None:
    """A compressed jsonl is planned as ranges of its decompressed bytes, like a plain
    file's: each document comes out exactly once across the units, the same documents
    in the same order as the plain file's, at the same offsets (the locator), for cuts
    inside lines, on a line's first byte and ranges holding no line start."""
    records = [{"text": f.read_text(errors="replace"), "path": str(f.relative_to(STDLIB))}
               for f in _stdlib_sources(60)]
    write_jsonl(tmp_path / "code.jsonl", records)
    plain = (tmp_path / "code.jsonl").read_bytes()
    lines = plain.splitlines(keepends=True)
    starts = list(itertools.accumulate(map(len, lines[:-1]), initial=0))
    copies = _compressed_copies(tmp_path, plain)
    source = {"name": "code", "kind": "code", "columns": {"path": "path"},
              "reader": {"type": "jsonl", "paths": ["code.jsonl"]}}
    for max_bytes in (len(plain) // 7 + 1, len(lines[0]), len(lines[0]) + 1, 20_000):
        units, table = units_and_tables(source, tmp_path, max_bytes=max_bytes)
        assert table.column("text").to_pylist() == [r["text"] for r in records]
        for kind, path in copies.items():
            source["reader"]["paths"] = [path.name]
            cut_units, cut = units_and_tables(source, tmp_path, max_bytes=max_bytes)
            source["reader"]["paths"] = ["code.jsonl"]
            assert [u.payload["inflated"] for u in cut_units] == [len(plain)] * len(cut_units)
            assert len(cut_units) == min(compressed.MAX_PARTS, len(units)), kind
            assert cut.column("reason").null_count == cut.num_rows, kind  # nothing quarantined
            assert cut.column("text").to_pylist() == [r["text"] for r in records], kind
            assert cut.column("path").to_pylist() == [r["path"] for r in records], kind
            # ids hash the locator, `file#@offset`: the plain file's offsets
            assert cut.column("id").to_pylist() == [
                document_id("code", f"{path.name}#@{offset}") for offset in starts], kind


def test_a_zstd_file_that_lies_about_its_size_loses_nothing_silently(tmp_path: Path) -> None:
    """A zstd frame header stating fewer or more bytes than the frame holds: libzstd
    refuses the frame, and exactly one unit (of several) says so; no unit reads past
    its range, and in = kept + removed."""
    import zstandard

    records = [{"text": f.read_text(errors="replace")} for f in _stdlib_sources(30)]
    write_jsonl(tmp_path / "code.jsonl", records)
    plain = (tmp_path / "code.jsonl").read_bytes()
    frame = bytearray(zstandard.ZstdCompressor(level=3).compress(plain))
    assert frame[4] >> 6 == 2 and frame[4] & 0x20  # single segment, 4-byte content size
    source = {"name": "code", "kind": "code",
              "reader": {"type": "jsonl", "paths": ["lie.jsonl.zst"]}}
    for stated in (len(plain) // 2, 2 * len(plain)):
        frame[5:9] = stated.to_bytes(4, "little")
        (tmp_path / "lie.jsonl.zst").write_bytes(frame)
        units, table = units_and_tables(source, tmp_path, max_bytes=len(plain) // 5)
        assert len(units) == -(-stated // (len(plain) // 5)) > 1
        assert units[0].payload["inflated"] == stated
        bad = table.filter(pc.is_valid(table.column("reason"))).to_pylist()
        assert [r["reason"] for r in bad] == ["unreadable_file"], stated
        assert bad[0]["path"] == "lie.jsonl.zst" and "read failed" in bad[0]["detail"]
        kept = table.filter(pc.is_null(table.column("reason"))).column("text").to_pylist()
        assert kept == [r["text"] for r in records][:len(kept)]


def test_compressed_jsonl_planning_reads_headers_or_counts(tmp_path: Path) -> None:
    """zstd stating its size is planned from its frame and block headers; gzip and an
    unsized zstd are counted once, stopping at 1000x the compressed size."""
    records = [{"text": f.read_text(errors="replace")} for f in _stdlib_sources(100)]
    write_jsonl(tmp_path / "code.jsonl", records)
    plain = (tmp_path / "code.jsonl").read_bytes()
    copies = _compressed_copies(tmp_path, plain)
    assert compressed._zstd_stated_size(str(copies["zst"])) == len(plain)
    assert compressed._zstd_stated_size(str(copies["zst frames"])) is None
    for path in copies.values():
        assert compressed.inflated_size(str(path), path.stat().st_size, 1) == \
            (len(plain), False)
    small = copies["gz"].stat().st_size // 2000  # as if 2000x: capped at 1000x
    assert compressed.inflated_size(str(copies["gz"]), small, 100) == (1000 * small, True)


def test_large_jsonl_is_read_as_byte_ranges_with_the_same_documents(tmp_path: Path) -> None:
    files = _stdlib_sources(120)
    records = [{"text": f.read_text(errors="replace"), "path": str(f.relative_to(STDLIB))}
               for f in files]
    write_jsonl(tmp_path / "code.jsonl", records)
    lines = (tmp_path / "code.jsonl").read_bytes().splitlines(keepends=True)
    size = sum(map(len, lines))
    source = {"name": "code", "kind": "code", "columns": {"path": "path"},
              "reader": {"type": "jsonl", "paths": ["code.jsonl"]}}
    whole_units, whole = units_and_tables(source, tmp_path)
    assert len(whole_units) == 1
    # Cuts inside lines, one on the first byte of the second line, and tiny ranges
    # that hold no line start at all.
    for max_bytes in (size // 7 + 1, len(lines[0]), len(lines[0]) + 1, 5000):
        units, table = units_and_tables(source, tmp_path, max_bytes=max_bytes)
        assert len(units) == -(-size // max_bytes) > 1
        assert table.column("id").to_pylist() == whole.column("id").to_pylist()
        assert table.column("text").to_pylist() == [r["text"] for r in records]
    assert len(set(whole.column("id").to_pylist())) == len(records)


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


def test_hf_dataset_streaming_false_loads_the_dataset(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    paragraphs = prose_paragraphs()[:30]
    write_jsonl(tmp_path / "a.jsonl", [{"text": t} for t in paragraphs[:15]])
    write_jsonl(tmp_path / "b.jsonl", [{"text": t} for t in paragraphs[15:]])
    reader = {"type": "hf_dataset", "path": "json", "data_files": ["a.jsonl", "b.jsonl"],
              "split": "train[:20]", "streaming": False}
    units, table = units_and_tables({"name": "web", "kind": "text", "reader": reader}, tmp_path)
    # Split slicing works on a loaded dataset only; its rows come from the local cache.
    assert table.column("text").to_pylist() == paragraphs[:20]
    assert len(units) == 1 and any((tmp_path / "cache").rglob("*.arrow"))
    reader["streaming"] = True
    with pytest.raises(ReaderError, match=r"train\[:20\]"):
        units_and_tables({"name": "web", "kind": "text", "reader": reader}, tmp_path)


def test_tree_languages_repos_and_licenses(tmp_path: Path) -> None:
    root = tmp_path / "repos"
    shutil.copytree(STDLIB / "json", root / "jsonlib" / "json",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # every site-packages on the path: a worktree's venv may hold its packages elsewhere (.pth)
    sites = [PURELIB] + [Path(p) for p in sys.path if p.endswith("site-packages")]
    licenses = [p for site in sites for p in sorted(site.glob("*.dist-info/licenses/LICENSE*"))
                + sorted(site.glob("*.dist-info/LICENSE*"))]
    mit = next(p for p in licenses if "Permission is hereby granted" in p.read_text())
    shutil.copy(mit, root / "jsonlib" / "LICENSE")
    tool = root / "tools"
    tool.mkdir()
    shutil.copy(STDLIB / "venv" / "scripts" / "common" / "activate", tool / "activate")
    (tool / "run").write_text("#!/usr/local/bin/python3\n" + (STDLIB / "this.py").read_text())
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


def test_tree_walks_only_folders_its_patterns_can_reach(tmp_path: Path) -> None:
    """`include` prunes the walk (the stdlib has ~8,700 folders; a build naming a few
    packages listed them all, ~0.5 CPU s) and selects exactly the files a full walk
    filtered by the same patterns selects."""
    from fnmatch import fnmatchcase

    include = ["json/*.py", "email/*.py", "xml/dom/*.py"]

    def listed(reader: dict) -> set[str]:
        manifest = parse_manifest({"name": "t", "sources": [
            {"name": "t", "kind": "code", "reader": {"type": "tree", "root": str(STDLIB),
                                                     **reader}}]}, "m", tmp_path)
        source = manifest.sources[0]
        return {rel for unit in plan_units(source.reader, source.info(), 10**6, 2**40)
                for rel, _, _ in unit.payload["files"]}

    walked: list[str] = []
    real_walk = os.walk

    def counting_walk(top: str, **kwargs: object):  # noqa: ANN202 - os.walk's own type
        for entry in real_walk(top, **kwargs):  # pyright: ignore[reportCallIssue, reportArgumentType]  # os.walk's keywords
            walked.append(entry[0])
            yield entry

    chosen = listed({"include": include})
    full = {rel for rel in listed({}) if any(fnmatchcase(rel, p) for p in include)}
    assert chosen == full and len(chosen) > 30, chosen ^ full
    os.walk = counting_walk
    try:
        listed({"include": include})
    finally:
        os.walk = real_walk
    assert {str(Path(w).relative_to(STDLIB)) for w in walked} >= {"json", "email/mime"}
    assert len(walked) < 60, walked  # not every folder of the stdlib, nor __pycache__


def test_python_object_reader_reads_help_topics(tmp_path: Path) -> None:
    source = {"name": "topics", "kind": "text", "lang": "en",
              "reader": {"type": "python_object", "object": "pydoc_data.topics:topics"}}
    units, table = units_and_tables(source, tmp_path, max_docs=50)
    assert len(units) > 1
    assert table.num_rows == len(prose_paragraphs())
