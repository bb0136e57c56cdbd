"""One bad row never costs the rest of its file: each is quarantined alone, naming the
file, the line and the field; and no value is silently damaged on the way in."""

from __future__ import annotations

import json
from pathlib import Path

from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.stages.ingest import plan_units, read_unit
from tests.realdata import STDLIB

COLUMNS = {"text": "content", "path": "path", "repo": "repo", "stars": "stars",
           "license": "licenses"}


def _read(tmp_path: Path, lines: list[str]) -> list[dict]:
    (tmp_path / "data.jsonl").write_text("".join(line + "\n" for line in lines))
    manifest = parse_manifest({"name": "rows", "sources": [
        {"name": "j", "kind": "code", "lang": "Python", "columns": COLUMNS,
         "reader": {"type": "jsonl", "paths": ["data.jsonl"]}}]}, "m", tmp_path)
    source = manifest.sources[0]
    return [row for unit in plan_units(source.reader, source.info(), 100, 2**30)
            for row in read_unit(source.reader, source.info(), unit).to_pylist()]


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
