"""The Stack v2 reader against a real S3-compatible server (moto_server, its own process on
127.0.0.1) holding blobs in Software Heritage's layout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from lemur_data.stages.ingest import plan_units, read_unit
from lemur_data.stages.readers.common import SourceInfo
from lemur_data.stages.readers.stack_v2 import StackV2Params
from tests.realdata import STDLIB
from tests.runs import digest
from tests.s3server import TEST_CREDENTIALS, S3Server, s3_server
from tests.stack_v2_data import StackV2Row, upload_blobs, write_metadata
from tests.test_cli import CLI, REPO


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with s3_server(tmp_path_factory.mktemp("s3") / "moto.log") as running:
        yield running


def corpus() -> list[StackV2Row]:
    """Real standard-library files as The Stack v2 rows: one latin-1 blob, one that the
    dataset marks generated, one vendored, one missing from the bucket, one corrupt."""
    files = sorted((STDLIB / "json").glob("*.py")) + sorted((STDLIB / "email").glob("*.py"))[:14]
    rows = [StackV2Row(f.read_text(), str(f.relative_to(STDLIB)), "python/cpython", stars=i)
            for i, f in enumerate(files)]
    latin = STDLIB / "getopt.py"
    rows.append(StackV2Row(latin.read_text(), "getopt.py", "python/cpython", encoding="ISO-8859-1"))
    rows[1].generated = True
    rows[2].vendor = True
    rows[3].upload = "missing"
    rows[4].upload = "corrupt"
    rows[5].licenses = ()
    return rows


def dataset(root: Path, rows: list[StackV2Row]) -> Path:
    write_metadata(root / "data" / "Python" / "train-00000-of-00001.parquet", rows, "Python")
    return root


def reader(root: Path, server: S3Server, **extra: object) -> dict:
    return {"type": "stack_v2", "paths": [str(root / "data" / "Python" / "*.parquet")],
            "endpoint_url": server.endpoint, **extra}


def test_blobs_fetched_decoded_and_bad_ones_quarantined(tmp_path: Path, server: S3Server,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in TEST_CREDENTIALS.items():  # boto3's usual chain: the environment
        monkeypatch.setenv(key, value)
    rows = corpus()
    upload_blobs(server.client(), rows)
    root = dataset(tmp_path, rows)
    params = StackV2Params.model_validate(reader(root, server, concurrency=4))
    source = SourceInfo("stack-v2-python", "code")
    units = plan_units(params, source, 8, 2**30)
    assert len(units) == 3  # 22 rows in row groups of 8: footers only, nothing fetched
    table = pa.concat_tables(read_unit(params, source, u) for u in units)
    assert table.num_rows == len(rows)
    got = table.to_pylist()
    for row, doc in zip(rows, got, strict=True):
        assert doc["repo"] == "python/cpython" and doc["path"] == "/" + row.path
        assert doc["lang"] == "Python" and doc["stars"] == row.stars
        assert doc["generated"] is row.generated and doc["vendor"] is row.vendor
        assert doc["license_type"] == ("permissive" if row.licenses else "no_license")
        # The Stack v1 form, comma-joined; an empty list is no licence (null), as in jsonl
        assert doc["license"] == (",".join(row.licenses) or None)
        if row.upload == "gzip":
            assert doc["reason"] is None and doc["text"] == row.text
    assert not got[-1]["text"].isascii()  # the ISO-8859-1 blob, decoded with its encoding
    assert (got[3]["reason"], got[4]["reason"]) == ("blob_missing", "blob_corrupt")
    assert rows[3].blob_id in got[3]["detail"] and rows[4].blob_id in got[4]["detail"]
    # 1 and 8 concurrent fetches give the same table
    one = StackV2Params.model_validate(reader(root, server, concurrency=1))
    assert pa.concat_tables(read_unit(one, source, u) for u in units).equals(table)


def test_license_type_is_the_class_for_licences_and_keep_order() -> None:
    from lemur_data.stages.base import ShardContext
    from lemur_data.stages.keeper import license_ranks
    from lemur_data.stages.licenses import Licenses, LicensesParams
    from lemur_data.stages.storage import documents_table

    # The Stack v2 calls a file permissive whose detected licence is not on our list
    licenses = pa.array(["LicenseRef-scancode-public-domain", "GPL-3.0-only", ""])
    given = pa.array(["permissive", None, "no_license"])
    assert license_ranks(licenses, "stack-v2", given).to_pylist() == [2, 0, 1]
    assert license_ranks(licenses, "stack-v2").to_pylist() == [0, 0, 1]
    docs = documents_table([{"id": str(i), "text": "x", "source": "s", "kind": "code",
                             "license": lic, "license_type": kind}
                            for i, (lic, kind) in enumerate(zip(licenses.to_pylist(),
                                                                given.to_pylist(), strict=True))])
    result = Licenses(LicensesParams(allow="permissive")).apply(docs, ShardContext("0", "", 0))
    assert result.reasons.to_pylist() == [None, "license_not_allowed", None]
    assert result.table.column("license_class").to_pylist() == ["permissive", "non_permissive",
                                                                 "no_license"]


def test_where_and_missing_columns_are_named(tmp_path: Path, server: S3Server,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in TEST_CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    rows = corpus()
    upload_blobs(server.client(), rows)
    root = dataset(tmp_path, rows)
    params = StackV2Params.model_validate(
        reader(root, server, where={"field": "is_vendor", "in": [False]}))
    source = SourceInfo("s", "code")
    table = pa.concat_tables(read_unit(params, source, u)
                             for u in plan_units(params, source, 8, 2**30))
    assert table.num_rows == len(rows) - 1 and not any(table.column("vendor").to_pylist())
    pq.write_table(pq.read_table(root / "data" / "Python").drop_columns(["src_encoding"]),
                   tmp_path / "bad.parquet")
    bad = StackV2Params.model_validate({**reader(root, server), "paths": [
        str(tmp_path / "bad.parquet")]})
    with pytest.raises(Exception, match=r"bad.parquet: column\(s\) \['src_encoding'\] not found"):
        read_unit(bad, source, plan_units(bad, source, 100, 2**30)[0])


@pytest.mark.slow
def test_build_end_to_end_kill_resume_and_workers(tmp_path: Path, server: S3Server) -> None:
    rows = corpus()
    upload_blobs(server.client(), rows)
    root = dataset(tmp_path / "hub", rows)
    manifest = {"name": "stack-v2", "seed": 3, "shard": {"max_docs": 8},
                "sources": [{"name": "stack-v2-python", "kind": "code",
                             "reader": reader(root, server, concurrency=8)}],
                "stages": [{"quality": {"code": {"preset": "starcoder2", "vendored": True}}}]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    env = {**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}, **TEST_CREDENTIALS}
    args = ["build", "--manifest", str(tmp_path / "m.yaml"), "--progress", "none"]

    def build(run: str, workers: int) -> None:
        done = subprocess.run([*CLI, *args, "--run-dir", str(tmp_path / run), "--workers",
                               str(workers)], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr

    build("one", 1)
    stats = json.loads((tmp_path / "one" / "stats.json").read_text())
    ingest, quality = stats["stages"][0], stats["stages"][1]
    assert ingest["removed_by_reason"]["ingest:blob_missing"]["docs"] == 1
    assert ingest["removed_by_reason"]["ingest:blob_corrupt"]["docs"] == 1
    assert quality["removed_by_reason"]["quality:generated"]["docs"] == 1
    assert quality["removed_by_reason"]["quality:vendored"]["docs"] == 1
    removed = pa.concat_tables(pq.read_table(p) for p in (tmp_path / "one" / "removed")
                               .rglob("*.parquet"))
    details = dict(zip(removed.column("reason").to_pylist(), removed.column("detail")
                       .to_pylist(), strict=True))
    assert rows[3].blob_id in details["ingest:blob_missing"]
    # no credential reaches the run folder or the card
    for path in (tmp_path / "one").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(v.encode() in data for k, v in TEST_CREDENTIALS.items()
                           if k != "AWS_DEFAULT_REGION"), path

    killed = tmp_path / "killed"
    process = subprocess.Popen([*CLI, *args, "--run-dir", str(killed), "--workers", "2"],
                               cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and len(list((killed / "markers").glob("01-*/*.json"))) < 1:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (killed / "stats.json").exists(), "the run finished before the kill"
    build("killed", 2)  # the same command resumes
    # 2 workers, killed and resumed == 1 worker straight through
    assert digest(killed) == digest(tmp_path / "one")


def test_the_documented_configuration_reads_a_card_layout_copy(
        tmp_path: Path, server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/manifest.md's Stack v2 source, with only `hf://datasets/` swapped for a local
    copy laid out as the card says; the bucket's address comes from the environment
    (AWS_ENDPOINT_URL, which boto3 reads), as the credentials do."""
    from lemur_data.pipeline.manifest import parse_manifest

    docs = (REPO / "docs" / "manifest.md").read_text()
    block = docs.split("### The Stack v2", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    (source,) = yaml.safe_load(block)
    reader = source["reader"]
    assert reader["paths"][0].startswith("hf://datasets/bigcode/the-stack-v2-dedup/")
    reader["paths"] = [p.replace("hf://datasets/", f"{tmp_path}/") for p in reader["paths"]]
    rows = corpus()[:6]
    upload_blobs(server.client(), rows)
    write_metadata(tmp_path / "bigcode/the-stack-v2-dedup/data/Python/train-00000-of-00001"
                   ".parquet", rows, "Python")
    for key, value in {**TEST_CREDENTIALS, "AWS_ENDPOINT_URL": server.endpoint}.items():
        monkeypatch.setenv(key, value)
    spec = parse_manifest({"name": "t", "sources": [source]}, "m", tmp_path).sources[0]
    table = pa.concat_tables(read_unit(spec.reader, spec.info(), u)
                             for u in plan_units(spec.reader, spec.info(), 100, 2**30))
    assert table.column("reason").to_pylist() == [None, None, None, "blob_missing",
                                                  "blob_corrupt", None]
    assert table.column("text").to_pylist()[0] == rows[0].text


def test_an_unreachable_bucket_fails_naming_the_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a quarantine: a network error must not decide what the output holds."""
    import socket

    from lemur_data.stages.readers.common import ReaderError

    for key, value in TEST_CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = dataset(tmp_path, corpus()[:3])
    params = StackV2Params.model_validate({
        "type": "stack_v2", "paths": [str(root / "data" / "Python" / "*.parquet")],
        "endpoint_url": f"http://127.0.0.1:{port}", "retries": 1})
    source = SourceInfo("s", "code")
    (unit,) = plan_units(params, source, 100, 2**30)
    with pytest.raises(ReaderError, match=r"train-00000-of-00001.parquet: fetching blobs from "
                                          r"s3://softwareheritage/content/ failed"):
        read_unit(params, source, unit)
