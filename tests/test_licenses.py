"""Licence policy on real metadata: the installed packages' METADATA, The Stack-style
licence lists, the licenses stage, and the keep order among exact duplicates."""

from __future__ import annotations

import email.parser
from pathlib import Path

import numpy
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lemur_data.filters.licenses import alternatives, check, license_class
from lemur_data.stages.base import ShardContext
from lemur_data.stages.exact_dedup import DecidePartition, HashShard
from lemur_data.stages.licenses import Licenses, LicensesParams
from lemur_data.stages.readers.common import SourceInfo
from lemur_data.stages.readers.files import TreeParams, TreeReader, _license_in_text
from lemur_data.stages.readers.package_license import PackageLicenses
from lemur_data.stages.storage import documents_table

# The site-packages that holds the demo's packages (numpy, pyarrow, ...).
SITE = Path(numpy.__file__).resolve().parents[1]
DEMO_PACKAGES = ["pip", "rich", "pydantic", "yaml", "fsspec", "polars", "pyarrow", "numpy",
                 "huggingface_hub", "click", "jsonschema", "requests", "urllib3", "aiohttp"]
CTX = ShardContext("0", "", 0)


def _metadata(info: Path) -> email.message.Message:
    with open(info / "METADATA", "rb") as handle:
        return email.parser.BytesHeaderParser().parse(handle)


def _packages_with_expression() -> dict[str, str]:
    """Top-level package folder -> License-Expression, for every installed distribution
    that declares one and names its single top-level package in top_level.txt."""
    found = {}
    for info in sorted(SITE.glob("*.dist-info")):
        top = info / "top_level.txt"
        expression = _metadata(info).get("License-Expression") if (info / "METADATA").is_file() \
            else None
        if not expression or not top.is_file():
            continue
        names = top.read_text().split()
        if len(names) == 1 and (SITE / names[0]).is_dir():
            found[names[0]] = " ".join(expression.split())
    return found


def test_package_licence_is_the_declared_expression() -> None:
    declared = _packages_with_expression()
    assert len(declared) >= 15
    packages = PackageLicenses(str(SITE), _license_in_text)
    assert {p: packages.license(p) for p in declared} == declared
    # every real expression parses into alternatives, and the classes are the expected ones
    for expression in declared.values():
        assert alternatives(expression), expression
    classes = {e: license_class(e) for e in declared.values()}
    assert classes.get("MIT", "permissive") == "permissive"
    assert classes.get("Apache-2.0", "permissive") == "permissive"
    assert all(c == "non_permissive" for e, c in classes.items() if "GPL" in e and " OR " not in e)


def test_demo_packages_all_get_a_licence() -> None:
    """The demo's site-packages source used to read no licence; every package's METADATA
    now gives one, and the tree reader puts it on every file."""
    reader = TreeReader(TreeParams(type="tree", root=str(SITE), subdirs=DEMO_PACKAGES[:4],
                                   repo_depth=1, include=["*.py"]),
                        SourceInfo("site", "code"))
    units = reader.plan(max_docs=100000, max_bytes=1 << 40)
    licences = {repo: lic for unit in units for repo, lic in unit.payload["licenses"].items()}
    assert set(licences) == set(DEMO_PACKAGES[:4])
    assert all(licences.values()), licences
    table = reader.read(units[0])
    assert table.num_rows > 100
    assert table.column("license").null_count == 0
    everything = PackageLicenses(str(SITE), _license_in_text)
    assert all(everything.license(p) for p in DEMO_PACKAGES if (SITE / p).is_dir())


def test_stack_lists_and_expressions() -> None:
    # The Stack's list column, comma-joined by the parquet reader: every licence applies
    assert license_class("MIT,Apache-2.0") == "permissive"
    assert license_class("MIT,GPL-3.0-only") == "non_permissive"
    assert license_class("GPL-2.0-only OR MIT") == "permissive"
    assert license_class("") == "no_license" and license_class(None) == "no_license"
    assert license_class("unknown") == "non_permissive"
    deny = frozenset({"gpl-3.0-only"})
    assert check("MIT,GPL-3.0-only", None, deny, "keep") == "license_denied"
    assert check("GPL-3.0-only OR MIT", None, deny, "keep") is None
    assert check("GPL-2.0-only WITH Classpath-exception-2.0", None,
                 frozenset({"gpl-2.0-only"}), "keep") == "license_denied"


def test_licenses_stage_allow_deny_missing() -> None:
    declared = sorted(set(_packages_with_expression().values()))
    values = [*declared, None, "LGPL-2.1-only", "MIT,GPL-3.0-only"]
    docs = documents_table([{"id": str(i), "text": "x", "source": "s", "kind": "code",
                             "license": v} for i, v in enumerate(values)])
    allow = Licenses(LicensesParams(allow="permissive")).apply(docs, CTX)
    expected = [None if license_class(v) == "permissive" else
                ("license_not_allowed" if v else None) for v in values]
    assert allow.reasons.to_pylist() == expected
    assert allow.table.column("license_class").to_pylist() == [license_class(v) for v in values]
    deny = Licenses(LicensesParams(deny=["GPL-3.0-only", "LGPL-2.1-only"], missing="drop"))
    reasons = deny.apply(docs, CTX).reasons.to_pylist()
    assert reasons[-3:] == ["no_license", "license_denied", "license_denied"]
    assert set(reasons[:-3]) <= {None, "license_denied"}


def test_keep_order_stack_v2_prefers_permissive(tmp_path: Path) -> None:
    """Three copies of each of 20 real files: GPL with most stars, no licence with some,
    MIT with fewest. `stars` keeps the GPL copy, `stack-v2` the MIT copy."""
    files = sorted((SITE / "yaml").glob("*.py"))[:20]
    rows = []
    for n, path in enumerate(files):
        text = path.read_text()
        for copy, (lic, stars) in enumerate([("GPL-3.0-only", 500), (None, 50), ("MIT", 5)]):
            rows.append({"id": f"{n:02d}-{copy}", "text": text, "source": "s", "kind": "code",
                         "license": lic, "stars": stars})
    shard = tmp_path / "shard.parquet"
    pq.write_table(documents_table(rows), shard)
    kept = {}
    for order in ("stars", "stack-v2"):
        hashes, decisions = tmp_path / order / "h" / "0", tmp_path / order / "d.parquet"
        HashShard(str(shard), str(hashes), "none", 1, None, order)()
        DecidePartition([str(hashes / "part-0000.parquet")], str(decisions), {"0": "0"},
                        order)()
        drops = pl.read_parquet(decisions)
        kept[order] = set(drops["kept_id"].to_list())
        assert drops.height == 2 * len(files)
    assert kept["stars"] == {f"{n:02d}-0" for n in range(len(files))}
    assert kept["stack-v2"] == {f"{n:02d}-2" for n in range(len(files))}
    assert pa.types.is_int8(pq.read_schema(hashes / "part-0000.parquet").field(
        "license_rank").type)


@pytest.mark.slow
def test_minhash_keep_order_stack_v2(ray_session, tmp_path: Path) -> None:
    """Near-duplicates (a real file and two copies with one line appended): MinHash with
    `keep_order: stack-v2` keeps the MIT copy although the GPL one has 100x the stars."""
    from tests.runs import run_build

    files = sorted((SITE / "click").glob("*.py"))[:12]
    rows = {"content": [], "path": [], "stars": [], "license": []}
    for n, path in enumerate(files):
        text = path.read_text()
        for copy, (lic, stars) in enumerate([("GPL-3.0-only", 500), (None, 50), ("MIT", 5)]):
            rows["content"].append(text + (f"\n# copy {copy}\n" if copy else ""))
            rows["path"].append(f"{n:02d}-{copy}-{path.name}")
            rows["stars"].append(stars)
            rows["license"].append(lic)
    pq.write_table(pa.table(rows), tmp_path / "dups.parquet")
    manifest = {"name": "keep", "shard": {"max_docs": 10},
                "sources": [{"name": "dups", "kind": "code", "lang": "Python",
                             "reader": {"type": "parquet",
                                        "paths": [str(tmp_path / "dups.parquet")]},
                             "columns": {"text": "content", "path": "path", "stars": "stars",
                                         "license": "license"}}],
                "stages": [{"minhash": {"keep_order": "stack-v2", "partitions": 2}}]}
    run = tmp_path / "run"
    run_build(manifest, tmp_path, run)
    shards = sorted(run.glob("stages/03-minhash/*.parquet"))
    kept = pa.concat_tables([pq.read_table(p) for p in shards])
    assert sorted(kept.column("path").to_pylist()) == sorted(
        f"{n:02d}-2-{p.name}" for n, p in enumerate(files))
