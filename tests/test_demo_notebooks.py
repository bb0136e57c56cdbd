"""The demo's notebooks (manifests/data/notebooks) are what their README says: real files
of the named packages, unchanged, with the licence the tree reader will read."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

from lemur_data.stages.readers.files import _license_of
from tests.fixtures import fixture
from tests.fixtures.fetch import STAMP

FOLDER = Path(__file__).resolve().parents[1] / "manifests" / "data" / "notebooks"
ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| (?P<package>[\w.+-]+)[^|]*\| (?P<version>\S+) \| "
                 r"`(?P<original>[^`]+)` \| (?P<licence>\S+) \| (?P<bytes>[\d,]+) \| "
                 r"`(?P<sha>[0-9a-f]{16})` \|$")


def rows() -> list[dict[str, str]]:
    lines = (FOLDER / "README.md").read_text().splitlines()
    return [m.groupdict() for line in lines if (m := ROW.match(line))]


def test_every_notebook_is_listed_once() -> None:
    listed = [r["file"] for r in rows()]
    on_disk = sorted(str(p.relative_to(FOLDER)) for p in FOLDER.rglob("*.ipynb"))
    assert sorted(listed) == on_disk and len(set(listed)) == len(listed)
    assert 8 <= len(listed) <= 12
    assert sum(p.stat().st_size for p in FOLDER.rglob("*")) < 1_000_000


def test_each_file_is_its_package_file_unchanged() -> None:
    for row in rows():
        stamp = json.loads((fixture(row["package"]) / STAMP).read_text())
        data = (FOLDER / row["file"]).read_bytes()
        original = (fixture(row["package"]) / row["original"].lstrip("/")).read_bytes()
        if row["original"].endswith(".gz"):
            original = gzip.decompress(original)
        assert data == original, row["file"]
        assert stamp["version"] == row["version"], row["file"]
        assert f"{len(data):,}" == row["bytes"]
        assert hashlib.sha256(data).hexdigest().startswith(row["sha"]), row["file"]


def test_the_tree_reader_reads_the_listed_licence() -> None:
    for row in rows():
        top = row["file"].split("/", 1)[0]
        assert _license_of(str(FOLDER / top)) == row["licence"], row["file"]
