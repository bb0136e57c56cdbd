"""One bad row never costs the rest of its file: each is quarantined alone, naming the
file, the line and the field; and no value is silently damaged on the way in."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.stages.ingest import plan_units, read_unit
from lemur_data.stages.readers.common import ReaderError
from tests.realdata import STDLIB

COLUMNS = {"text": "content", "path": "path", "repo": "repo", "stars": "stars",
           "license": "licenses"}


def _read_source(tmp_path: Path, reader: str, file: str, columns: dict[str, str],
                 ) -> list[dict]:
    """Every row of a one-source manifest reading `file` in `tmp_path`, unit by unit."""
    manifest = parse_manifest({"name": "rows", "sources": [
        {"name": "src", "kind": "code", "lang": "Python", "columns": columns,
         "reader": {"type": reader, "paths": [file]}}]}, "m", tmp_path)
    source = manifest.sources[0]
    return [row for unit in plan_units(source.reader, source.info(), 100, 2**30)
            for row in read_unit(source.reader, source.info(), unit).to_pylist()]


def _read(tmp_path: Path, lines: list[str]) -> list[dict]:
    (tmp_path / "data.jsonl").write_text("".join(line + "\n" for line in lines))
    return _read_source(tmp_path, "jsonl", "data.jsonl", COLUMNS)


def _good(i: int, text: str, **fields: object) -> str:
    return json.dumps({"content": text, "path": f"f{i}.py", "repo": "a/b", "stars": i,
                       "licenses": ["MIT"], **fields})


def test_each_hostile_line_is_quarantined_alone(tmp_path: Path) -> None:
    source = (STDLIB / "json" / "decoder.py").read_text()
    hostile = {
        "nested": '{"content": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "digits": '{"content": "x", "stars": ' + "7" * 5000 + "}",
        "infinity": '{"content": "x", "stars": Infinity}',
        "stars text": json.dumps({"content": "x", "stars": "x"}),
        "stars 2^64": json.dumps({"content": "x", "stars": 2**64}),
        "struct repo": json.dumps({"content": "x", "repo": {"name": "a", "owner": "b"}}),
    }
    lines = [_good(0, source)]
    for line in hostile.values():
        lines += [line, _good(len(lines), source)]
    rows = _read(tmp_path, lines)
    assert len(rows) == len(lines)  # in = kept + removed: nothing lost
    kept = [r for r in rows if r["reason"] is None]
    assert len(kept) == len(hostile) + 1 and all(r["text"] == source for r in kept)
    bad = [r for r in rows if r["reason"] is not None]
    reasons = [(r["reason"], r["detail"]) for r in bad]
    assert [r for r, _ in reasons] == ["invalid_json", "invalid_json", "invalid_field",
                                       "invalid_field", "invalid_field", "invalid_field"]
    assert "RecursionError" in reasons[0][1] and "line 2" in reasons[0][1]
    assert "digits" in reasons[1][1] and "line 4" in reasons[1][1]
    for (_, detail), field in zip(reasons[2:], ["stars", "stars", "stars", "repo"],
                                  strict=True):
        assert "data.jsonl line" in detail and f"field {field!r}" in detail, detail


def test_no_silent_type_damage(tmp_path: Path) -> None:
    rows = _read(tmp_path, [_good(0, "x = 1\n", licenses=["MIT", None, "Apache-2.0"]),
                            _good(1, "y = 2\n", stars=2**63 - 1)])
    assert rows[0]["license"] == "MIT,Apache-2.0"  # not "MIT,None,Apache-2.0"
    assert rows[1]["stars"] == 2**63 - 1 and rows[1]["reason"] is None


def test_a_huge_line_in_a_small_gzip_is_too_large_without_being_held(tmp_path: Path) -> None:
    """200 MB on one line, about 200 KB gzipped, between two good lines: the line is read
    in pieces and dropped (`too_large`), and the reader's peak memory stays far below it."""
    import gzip
    import subprocess
    import sys

    with gzip.open(tmp_path / "big.jsonl.gz", "wb", compresslevel=1) as out:
        out.write((_good(0, "x = 1\n") + "\n").encode())
        out.write(b'{"content": "')
        for _ in range(200):
            out.write(b"a" * (1 << 20))
        out.write(b'"}\n')
        out.write((_good(2, "y = 2\n") + "\n").encode())
    assert (tmp_path / "big.jsonl.gz").stat().st_size < 2 << 20
    code = (
        "import json, resource, sys\nfrom pathlib import Path\n"
        "from lemur_data.pipeline.manifest import parse_manifest\n"
        "from lemur_data.stages.ingest import plan_units, read_unit\n"
        "m = parse_manifest({'name': 'g', 'sources': [{'name': 'j', 'kind': 'code',"
        " 'max_doc_bytes': '1MiB', 'columns': {'text': 'content'},"
        " 'reader': {'type': 'jsonl', 'paths': ['big.jsonl.gz']}}]},"
        " 'm', Path(sys.argv[1]))\n"
        "s = m.sources[0]\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "rows = [r for u in plan_units(s.reader, s.info(), 100, 2**30)"
        " for r in read_unit(s.reader, s.info(), u).to_pylist()]\n"
        "grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before\n"
        "print(json.dumps({'grew_kb': grew, 'rows': [[r['reason'], r['detail']] for r in rows]}))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=300, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    result = json.loads(done.stdout.splitlines()[-1])
    assert [r for r, _ in result["rows"]] == [None, "too_large", None], result["rows"]
    assert "line 2: a line of 209715216 bytes" in result["rows"][1][1]
    assert result["grew_kb"] < 64 * 1024, result  # < 64 MB for a 200 MB line (limit: 2 MiB)


def _plan_then_read(tmp_path: Path, name: str, grow: Callable[[Path], None]) -> list[dict]:
    manifest = parse_manifest({"name": "rows", "sources": [
        {"name": "j", "kind": "code", "lang": "Python", "columns": COLUMNS,
         "reader": {"type": "jsonl", "paths": [name]}}]}, "m", tmp_path)
    source = manifest.sources[0]
    units = plan_units(source.reader, source.info(), 100, 2**30)
    grow(tmp_path / name)  # after planning, before the read
    return [row for unit in units
            for row in read_unit(source.reader, source.info(), unit).to_pylist()]


def test_a_jsonl_file_that_grows_after_planning_is_read_as_planned(tmp_path: Path) -> None:
    """Lines appended after planning are not read (the unit's memory is what was planned,
    not what the file became); one record says the file grew, naming both sizes."""
    files = sorted((STDLIB / "json").glob("*.py"))
    planned = "".join(_good(i, f.read_text()) + "\n" for i, f in enumerate(files))
    (tmp_path / "data.jsonl").write_text(planned)

    def append(path: Path) -> None:
        with path.open("a") as out:
            for i, f in enumerate(sorted((STDLIB / "email").glob("*.py"))):
                out.write(_good(100 + i, f.read_text()) + "\n")

    rows = _plan_then_read(tmp_path, "data.jsonl", append)
    kept = [r for r in rows if r["reason"] is None]
    assert [r["text"] for r in kept] == [f.read_text() for f in files]
    (grew,) = [r for r in rows if r["reason"] is not None]
    assert grew["reason"] == "unreadable_file" and grew["path"] == "data.jsonl"
    size = len(planned.encode())
    assert f"grew from {size:,} to " in grew["detail"], grew["detail"]
    assert f"read up to byte {size:,}" in grew["detail"]


def test_a_gzip_jsonl_that_grows_after_planning_is_read_as_planned(tmp_path: Path) -> None:
    """A gzip member appended after planning (`cat more.gz >> data.jsonl.gz`): the read
    stops at the planned size, which ends the first member cleanly."""
    import gzip

    files = sorted((STDLIB / "json").glob("*.py"))
    with gzip.open(tmp_path / "data.jsonl.gz", "wt") as out:
        out.write("".join(_good(i, f.read_text()) + "\n" for i, f in enumerate(files)))

    def append(path: Path) -> None:
        more = "".join(_good(100 + i, f.read_text()) + "\n"
                       for i, f in enumerate(sorted((STDLIB / "email").glob("*.py"))))
        with path.open("ab") as out:
            out.write(gzip.compress(more.encode()))

    rows = _plan_then_read(tmp_path, "data.jsonl.gz", append)
    assert [r["text"] for r in rows if r["reason"] is None] == [f.read_text() for f in files]
    assert [r["reason"] for r in rows if r["reason"]] == ["unreadable_file"]
    assert "grew from" in rows[-1]["detail"]


def _read_parquet(tmp_path: Path, table: pa.Table, columns: dict[str, str]) -> list[dict]:
    pq.write_table(table, tmp_path / "data.parquet", row_group_size=3)
    return _read_source(tmp_path, "parquet", "data.parquet", columns)


def test_parquet_values_of_the_wrong_type_cost_their_row_alone(tmp_path: Path) -> None:
    """A Stack-like file from real files, with a uint64 `stars` past int64, a string
    `stars` of "x", a struct `repo`, a binary `path` that is not UTF-8 and a licence list
    with a null: each bad value quarantines its row (`invalid_field`, naming file, row
    and column), never a silent -1, "b'...'" or "MIT,None", never the whole file."""
    files = sorted((STDLIB / "json").glob("*.py"))[:5]
    text = [f.read_text() for f in files]
    table = pa.table({
        "content": text,
        "stars_u64": pa.array([1, 2**64 - 1, 3, 4, 5], pa.uint64()),
        "stars_str": ["10", "11", "x", "13", "14"],
        "repo": pa.array([{"owner": "python", "name": "cpython"} if i == 3 else None
                          for i in range(5)],
                         pa.struct([("owner", pa.string()), ("name", pa.string())])),
        "path": pa.array([f.name.encode() if i != 4 else b"caf\xe9.py"
                          for i, f in enumerate(files)], pa.binary()),
        "licenses": [["MIT", None, "Apache-2.0"], ["MIT"], None, ["BSD-3-Clause"], []],
    })
    base = {"text": "content", "path": "path", "license": "licenses"}
    rows = _read_parquet(tmp_path, table, {**base, "stars": "stars_u64", "repo": "repo"})
    assert len(rows) == 5 and [r["text"] for r in rows] == text  # in = kept + removed
    assert [r["reason"] for r in rows] == [None, "invalid_field", None, "invalid_field",
                                           "invalid_field"]
    assert rows[1]["stars"] is None and "data.parquet row 1" in rows[1]["detail"]
    assert "'stars_u64' (stars)" in rows[1]["detail"] and "beyond int64" in rows[1]["detail"]
    assert "'repo' (repo) is a mapping" in rows[3]["detail"]
    assert "'path' (path) is bytes that are not UTF-8" in rows[4]["detail"]
    assert rows[0]["license"] == "MIT,Apache-2.0" and rows[0]["path"] == files[0].name
    assert [r["stars"] for r in rows][::2] == [1, 3, 5]
    rows = _read_parquet(tmp_path, table, {"text": "content", "stars": "stars_str"})
    assert [r["reason"] for r in rows] == [None, None, "invalid_field", None, None]
    assert [r["stars"] for r in rows] == [10, 11, None, 13, 14]
    assert "data.parquet row 2: field 'stars_str' (stars) is 'x'" in rows[2]["detail"]


def test_a_duplicate_parquet_column_is_an_error_naming_file_and_column(tmp_path: Path) -> None:
    text = [f.read_text() for f in sorted((STDLIB / "json").glob("*.py"))[:3]]
    table = pa.Table.from_arrays([pa.array(text), pa.array([1, 2, 3]), pa.array([4, 5, 6])],
                                 names=["content", "stars", "stars"])
    with pytest.raises(ReaderError) as error:
        _read_parquet(tmp_path, table, {"text": "content", "stars": "stars"})
    assert "data.parquet: column 'stars' (for stars) appears 2 times" in str(error.value)


def test_a_parquet_text_column_of_the_wrong_type_is_an_error(tmp_path: Path) -> None:
    table = pa.table({"content": pa.array([1, 2, 3]), "path": ["a.py", "b.py", "c.py"]})
    with pytest.raises(ReaderError) as error:
        _read_parquet(tmp_path, table, {"text": "content"})
    assert "data.parquet: text column 'content' has type int64" in str(error.value)


def test_a_zstd_window_past_the_line_bound_is_refused(tmp_path: Path) -> None:
    """`zstd --long=27`: the decompressor would fill a 128 MiB window. With
    max_doc_bytes 1 MiB (window bound 8 MiB) the file is `unreadable_file` naming the
    cause; with 64 MiB (bound 128 MiB) the same file reads."""
    import zstandard

    files = sorted((STDLIB / "json").glob("*.py"))
    lines = "".join(_good(i, f.read_text()) + "\n" for i, f in enumerate(files)).encode()
    params = zstandard.ZstdCompressionParameters.from_level(
        3, window_log=27, enable_ldm=True, write_content_size=False)
    with (tmp_path / "long.jsonl.zst").open("wb") as raw, \
            zstandard.ZstdCompressor(compression_params=params).stream_writer(raw) as out:
        out.write(lines)
    details = []
    for limit, expected in (("1MiB", ["unreadable_file"]), ("64MiB", [None] * len(files))):
        manifest = parse_manifest({"name": "rows", "sources": [
            {"name": "j", "kind": "code", "max_doc_bytes": limit, "columns": COLUMNS,
             "reader": {"type": "jsonl", "paths": ["long.jsonl.zst"]}}]}, "m", tmp_path)
        source = manifest.sources[0]
        rows = [row for unit in plan_units(source.reader, source.info(), 100, 2**30)
                for row in read_unit(source.reader, source.info(), unit).to_pylist()]
        assert [r["reason"] for r in rows] == expected, limit
        details.append(rows[0]["detail"])
    assert "Frame requires too much memory" in details[0], details[0]


def test_a_zstd_bomb_of_many_lines_is_read_up_to_a_ratio(tmp_path: Path) -> None:
    """One real document's line repeated 8,000 times (~100 MB) in a zstd file of a few
    KB: the lines are each fine, but together a bomb. It is planned up to 1000x the
    compressed size (at least 2x max_doc_bytes), in units of `shard.max_bytes`, then one
    record says why it stopped; a real compressed file is far below the ratio
    (test_readers)."""
    import zstandard

    line = (_good(0, (STDLIB / "json" / "encoder.py").read_text()) + "\n").encode()
    with (tmp_path / "bomb.jsonl.zst").open("wb") as raw, \
            zstandard.ZstdCompressor(level=19).stream_writer(raw) as out:
        for _ in range(8000):
            out.write(line)
    size = (tmp_path / "bomb.jsonl.zst").stat().st_size
    assert size * 1000 < 8000 * len(line)
    manifest = parse_manifest({"name": "rows", "sources": [
        {"name": "j", "kind": "code", "max_doc_bytes": "1MiB", "columns": COLUMNS,
         "reader": {"type": "jsonl", "paths": ["bomb.jsonl.zst"]}}]}, "m", tmp_path)
    source = manifest.sources[0]
    units = plan_units(source.reader, source.info(), 10**6, 4 << 20)
    assert len(units) == -(-max(1000 * size, 2 << 20) // (4 << 20)) > 1
    rows = [row for unit in units
            for row in read_unit(source.reader, source.info(), unit).to_pylist()]
    cap = max(1000 * size, 2 << 20)
    assert [r["reason"] for r in rows[:-1]] == [None] * (cap // len(line))
    assert rows[-1]["reason"] == "unreadable_file"
    assert "a decompression bomb?" in rows[-1]["detail"]
    at = cap // len(line) * len(line)  # the first line the cap cuts
    assert f"not read from decompressed byte {at:,} on" in rows[-1]["detail"], rows[-1]["detail"]
