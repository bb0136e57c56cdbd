"""Remote compressed jsonl (`s3://` on a real S3-compatible server, moto_server on
127.0.0.1; `file://` URLs for filesystems without an async client, as `hf://` is): cut
into units of bounded decompressed bytes like a local file, planned from a few ranged
reads, never a whole file; and the local gzip/bz2/xz count kept by the file's stamp."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml

from lemur_data.pipeline.manifest import Manifest, parse_manifest
from lemur_data.pipeline.planner import Continuations
from lemur_data.stages.ingest import plan_units, read_unit, read_unit_more
from lemur_data.stages.readers import compressed
from lemur_data.stages.readers.common import InputUnit, ReaderError, document_id
from tests.realdata import STDLIB, write_jsonl
from tests.runs import digest, removed_reasons
from tests.s3server import TEST_CREDENTIALS, S3Server, s3_server
from tests.test_cli import CLI, REPO
from tests.test_readers import _compressed_copies, _stdlib_sources

BUCKET = "corpus"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with s3_server(tmp_path_factory.mktemp("s3") / "moto.log") as running:
        running.client().create_bucket(Bucket=BUCKET)
        yield running


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Sizes and counts kept in this test's folder, not the user's cache."""
    monkeypatch.setenv("LEMUR_DATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(compressed, "_SIZED", {})
    return tmp_path / "cache"


@pytest.fixture
def s3_env(server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """Credentials and endpoint in the environment, where s3fs (botocore) finds them."""
    for key, value in {**TEST_CREDENTIALS, "AWS_ENDPOINT_URL": server.endpoint}.items():
        monkeypatch.setenv(key, value)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # a new endpoint: not an old client's
    return server


def _plan_and_read(paths: list[str], folder: Path, max_bytes: int, **source: Any,
                   ) -> tuple[list[InputUnit], pa.Table]:
    manifest = parse_manifest({"name": "t", "sources": [
        {"name": "code", "kind": "code", "columns": {"path": "path"}, **source,
         "reader": {"type": "jsonl", "paths": paths}}]}, "m", folder)
    spec = manifest.sources[0]
    units = plan_units(spec.reader, spec.info(), 10**6, max_bytes)
    return units, pa.concat_tables(read_unit(spec.reader, spec.info(), u) for u in units)


def _read_on(manifest: Manifest, units: list[InputUnit]) -> tuple[list[InputUnit], pa.Table]:
    """Every unit read, with the units that read what a unit found past its plan, planned
    as a build plans them (planner.Continuations): (all units, their documents in order)."""
    spec = manifest.sources[0]
    listed = {spec.name: units}
    more = Continuations(manifest, listed)
    read: dict[str, tuple[pa.Table, dict[str, Any] | None]] = {}
    while True:
        current = more.extend(listed)
        for unit in current[spec.name]:
            if unit.shard_id not in read:
                read[unit.shard_id] = read_unit_more(spec.reader, spec.info(), unit)
        summaries = [{"shard": shard, **({"more": found} if found else {})}
                     for shard, (_, found) in read.items()]
        if not more.found(current, summaries):
            return current[spec.name], pa.concat_tables(
                read[u.shard_id][0] for u in current[spec.name])


def _expanding(folder: Path) -> tuple[bytes, list[int], dict[str, Path]]:
    """Real documents that compress far better past their first 64 KiB, as a dump holding
    many copies of one file does: `_corpus`'s 100 stdlib files (1.8 MB), then
    json/encoder.py's record 400 times (6.7 MB, a few KB of gzip). (plain bytes, each
    line's offset, gzip and xz copies): their first 64 KiB estimate about half the size."""
    import lzma

    _, head, _ = _corpus(folder)
    line = (json.dumps({"text": (STDLIB / "json" / "encoder.py").read_text(),
                        "path": "json/encoder.py"}) + "\n").encode()
    plain = head + line * 400
    lines = plain.splitlines(keepends=True)
    copies = {"gz": folder / "expanding.jsonl.gz", "xz": folder / "expanding.jsonl.xz"}
    copies["gz"].write_bytes(gzip.compress(plain, mtime=0))
    copies["xz"].write_bytes(lzma.compress(plain))
    return plain, list(itertools.accumulate(map(len, lines[:-1]), initial=0)), copies


def _corpus(folder: Path) -> tuple[list[dict[str, str]], bytes, list[int]]:
    """Real stdlib files as jsonl records, the plain bytes, each line's offset."""
    records = [{"text": f.read_text(errors="replace"), "path": str(f.relative_to(STDLIB))}
               for f in _stdlib_sources(100)]
    write_jsonl(folder / "code.jsonl", records)
    plain = (folder / "code.jsonl").read_bytes()
    lines = plain.splitlines(keepends=True)
    return records, plain, list(itertools.accumulate(map(len, lines[:-1]), initial=0))


class _Fetched:
    """Bytes s3fs hands back, by call: ranged reads (`_cat_file`) and streamed reads."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import s3fs

        self.ranged: list[int] = []
        self.opened = 0
        cat, opener = s3fs.S3FileSystem._cat_file, s3fs.S3FileSystem._open

        async def counted_cat(fs: Any, *args: Any, **kwargs: Any) -> bytes:
            data = await cat(fs, *args, **kwargs)
            self.ranged.append(len(data))
            return data

        def counted_open(fs: Any, *args: Any, **kwargs: Any) -> Any:
            self.opened += 1
            return opener(fs, *args, **kwargs)

        monkeypatch.setattr(s3fs.S3FileSystem, "_cat_file", counted_cat)
        monkeypatch.setattr(s3fs.S3FileSystem, "_open", counted_open)


def test_remote_compressed_jsonl_is_cut_into_bounded_units(
        tmp_path: Path, s3_env: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind on S3 is planned from at most 18 bytes (a zstd stating its size) or its
    first 64 KiB (1 MiB more for bz2), in units of at most `shard.max_bytes` decompressed
    (the last reads on by at most one unit), and gives the local file's documents with
    the same ids."""
    records, plain, starts = _corpus(tmp_path)
    copies = _compressed_copies(tmp_path, plain)
    client = s3_env.client()
    for path in copies.values():
        client.upload_file(str(path), BUCKET, f"cut/{path.name}")
    max_bytes = len(plain) // 5
    for kind, path in copies.items():
        assert path.stat().st_size > compressed._SAMPLE, kind  # sampled, not read whole
        url = f"s3://{BUCKET}/cut/{path.name}"
        fetched = _Fetched(monkeypatch)
        manifest = parse_manifest({"name": "t", "sources": [
            {"name": "code", "kind": "code", "columns": {"path": "path"},
             "reader": {"type": "jsonl", "paths": [url]}}]}, "m", tmp_path)
        spec = manifest.sources[0]
        units = plan_units(spec.reader, spec.info(), 10**6, max_bytes)
        # planning: ranged reads only, of a header or a sample, no file opened to stream
        assert fetched.opened == 0, kind
        # (bz2's first block is larger than 64 KiB compressed: a second sample, of 1 MiB)
        assert sum(fetched.ranged) <= {"zst": 18, "bz2": 18 + 64 * 1024 + (1 << 20)}.get(
            kind, 18 + 64 * 1024), (kind, fetched.ranged)
        spans = [u.payload.get("end", u.payload["inflated"]) - u.payload.get("start", 0)
                 for u in units]
        assert len(units) > 1 and max(spans[:-1]) <= max_bytes, (kind, spans)
        assert spans[-1] <= 2 * max_bytes, (kind, spans)  # the last: one unit more at most
        # exact: stated by zstd's header, or the bz2 sample is the whole file
        exact = kind in ("zst", "bz2")
        assert units[0].payload.get("estimated", False) is not exact, kind
        if exact:  # the size, plus one unit the last may read on
            assert units[0].payload["inflated"] == len(plain) + -(-len(plain) // len(units))
        table = pa.concat_tables(read_unit(spec.reader, spec.info(), u) for u in units)
        assert table.column("reason").null_count == table.num_rows, kind
        assert table.column("text").to_pylist() == [r["text"] for r in records], kind
        assert table.column("id").to_pylist() == [
            document_id("code", f"{path.name}#@{offset}") for offset in starts], kind
        # the same documents as the local copy, which is counted or sized exactly
        local = _plan_and_read([str(path)], tmp_path, max_bytes)[1]
        assert local.column("id").equals(table.column("id")), kind
        # another source of the same file (lemur-90b's SlimPajama parts) reads no head
        fetched = _Fetched(monkeypatch)
        again = plan_units(spec.reader, spec.info(), 10**6, max_bytes)
        assert fetched.ranged == [] and [u.payload for u in again] == [u.payload for u in units]


def test_a_remote_zstd_bomb_is_read_in_bounded_units_up_to_the_cap(
        tmp_path: Path, s3_env: S3Server) -> None:
    """One real document's line repeated to ~100 MB in a zstd of a few KB that states no
    size: planned up to 1000x its compressed size in units of `shard.max_bytes`, each
    holding only its range, and one record says why it stopped."""
    import zstandard

    raw_line = (json.dumps({"text": (STDLIB / "json" / "encoder.py").read_text()})
                + "\n").encode()
    bomb = tmp_path / "bomb.jsonl.zst"
    with bomb.open("wb") as raw, zstandard.ZstdCompressor(
            level=19, write_content_size=False).stream_writer(raw) as out:
        for _ in range(8000):
            out.write(raw_line)
    size = bomb.stat().st_size
    assert size < compressed._SAMPLE and size * 1000 < 8000 * len(raw_line)
    s3_env.client().upload_file(str(bomb), BUCKET, "bomb/bomb.jsonl.zst")
    cap = max(1000 * size, 2 << 20)
    units, table = _plan_and_read([f"s3://{BUCKET}/bomb/bomb.jsonl.zst"], tmp_path, 4 << 20,
                                  max_doc_bytes="1MiB")
    assert len(units) == min(compressed.MAX_PARTS, -(-cap // (4 << 20))) > 1
    assert units[-1].payload["inflated"] == cap and units[-1].payload["capped"]
    rows = table.to_pylist()
    assert [r["reason"] for r in rows[:-1]] == [None] * (cap // len(raw_line))
    assert rows[-1]["reason"] == "unreadable_file"
    assert "a decompression bomb?" in rows[-1]["detail"], rows[-1]["detail"]


def test_a_remote_zstd_header_stating_too_much_is_planned_up_to_the_cap(
        tmp_path: Path) -> None:
    """A frame header stating 4 GB for 1.3 MB of lines: planned up to 1000x the file's
    size, the units cutting that, not the stated size; libzstd refuses the frame where it
    disagrees, one unit says so, and the lines before are kept."""
    import zstandard

    records, plain, _ = _corpus(tmp_path)
    frame = bytearray(zstandard.ZstdCompressor(level=3).compress(plain))
    assert frame[4] >> 6 == 2 and frame[4] & 0x20  # single segment, 4-byte content size
    frame[5:9] = (2**32 - 1).to_bytes(4, "little")
    (tmp_path / "lie.jsonl.zst").write_bytes(frame)
    cap = 1000 * len(frame)
    units, table = _plan_and_read([f"file://{tmp_path / 'lie.jsonl.zst'}"], tmp_path,
                                  cap // 8)
    assert len(units) == 8 and units[-1].payload["inflated"] == cap
    assert all(u.payload.get("end", cap) <= cap for u in units)
    bad = [r for r in table.to_pylist() if r["reason"]]
    assert [r["reason"] for r in bad] == ["unreadable_file"] and "read failed" in bad[0]["detail"]
    kept = [r["text"] for r in table.to_pylist() if not r["reason"]]
    assert kept == [r["text"] for r in records][:len(kept)]


def test_a_url_without_an_async_client_is_planned_the_same_way(tmp_path: Path) -> None:
    """`file://` (no async client, as HfFileSystem; its reads go to threads): a zstd
    stating its size is cut as a local one, a gzip by twice its sample's estimate."""
    records, plain, _ = _corpus(tmp_path)
    copies = _compressed_copies(tmp_path, plain)
    for kind in ("zst", "gz"):
        units, table = _plan_and_read([f"file://{copies[kind]}"], tmp_path, len(plain) // 4)
        estimated = units[0].payload.get("estimated", False)
        assert estimated is (kind == "gz")
        assert len(units) in ((8, 9, 10) if estimated else (4, 5)), (kind, len(units))
        assert table.column("text").to_pylist() == [r["text"] for r in records], kind


def test_a_remote_file_past_its_estimate_is_read_to_its_end(
        tmp_path: Path, s3_env: S3Server) -> None:
    """gzip and xz on S3 whose ratio grows past their first 64 KiB: planned from that
    sample (doubled, the last unit reading on by one unit) short of their size, their
    last unit finds the rest, counts it without holding it, and the units planned for
    it read every line: the plain file's documents and ids, nothing quarantined, no
    unit over `shard.max_bytes` but the planned last one (2x)."""
    plain, starts, copies = _expanding(tmp_path)
    max_bytes = len(plain) // 6
    for kind, path in copies.items():
        s3_env.client().upload_file(str(path), BUCKET, f"expanding/{path.name}")
        manifest = parse_manifest({"name": "t", "shard": {"max_bytes": max_bytes}, "sources": [
            {"name": "code", "kind": "code", "columns": {"path": "path"},
             "reader": {"type": "jsonl", "paths": [f"s3://{BUCKET}/expanding/{path.name}"]}}]},
            "m", tmp_path)
        spec = manifest.sources[0]
        units = plan_units(spec.reader, spec.info(), 10**6, max_bytes)
        planned = units[-1].payload
        assert planned["estimated"] and planned["end"] < len(plain), (kind, planned)
        read, table = _read_on(manifest, units)
        assert len(read) > len(units), kind
        assert read[-1].payload["inflated"] == len(plain), kind  # counted, not estimated
        spans = [u.payload["end"] - u.payload["start"] for u in read]
        assert max(spans[len(units):]) <= max_bytes, (kind, spans)
        assert table.column("reason").null_count == table.num_rows, (
            kind, table.filter(table.column("reason").is_valid()).column("detail").to_pylist())
        assert table.column("id").to_pylist() == [
            document_id("code", f"{path.name}#@{offset}") for offset in starts], kind
        assert b"".join(t.encode() for t in table.column("text").to_pylist()) == b"".join(
            json.loads(line)["text"].encode() for line in plain.splitlines()), kind


def test_a_remote_file_whose_head_cannot_be_read_is_one_unit(
        tmp_path: Path, s3_env: S3Server) -> None:
    """An object that is listed but not readable (archived: S3's GLACIER storage class,
    whose GET is refused) is planned as one unit of nothing, not up to the bomb cap in
    32: its read fails and names the file and the error (a quarantine record, or the
    build's error with `on_bad_file: fail`). Restored, the same unit reads on and the
    units planned after it read every line."""
    records, plain, _ = _corpus(tmp_path)
    client = s3_env.client()
    client.put_object(Bucket=BUCKET, Key="cold/code.jsonl.gz", StorageClass="GLACIER",
                      Body=gzip.compress(plain, mtime=0))
    url = f"s3://{BUCKET}/cold/code.jsonl.gz"
    units, table = _plan_and_read([url], tmp_path, len(plain) // 8)
    assert len(units) == 1 and units[0].payload["inflated"] == 0, [u.payload for u in units]
    rows = table.to_pylist()
    assert [r["reason"] for r in rows] == ["unreadable_file"], rows
    assert rows[0]["path"] == "code.jsonl.gz" and "read failed" in rows[0]["detail"] \
        and "storage class" in rows[0]["detail"], rows[0]["detail"]
    with pytest.raises(ReaderError, match=r"code\.jsonl\.gz: read failed"):
        _plan_and_read([url], tmp_path, len(plain) // 8, on_bad_file="fail")
    client.restore_object(Bucket=BUCKET, Key="cold/code.jsonl.gz",
                          RestoreRequest={"Days": 1})
    manifest = parse_manifest({"name": "t", "sources": [
        {"name": "code", "kind": "code", "columns": {"path": "path"},
         "reader": {"type": "jsonl", "paths": [url]}}]}, "m", tmp_path)
    read, table = _read_on(manifest, units)  # the units planned while it was archived
    assert len(read) > 1 and table.column("reason").null_count == table.num_rows
    assert table.column("text").to_pylist() == [r["text"] for r in records]


def test_read_needed_reads_a_remote_file_past_its_estimate(ray_session: Any,
                                                          tmp_path: Path) -> None:
    """`read: needed` rounds carry the units planned for what a unit found past its
    plan: a `file://` gzip (planned as a remote file, from its first 64 KiB) that
    expands far past that, all of which the mix needs, is read to its end as with
    `read: all`, the same documents kept, none lost to a record."""
    import pyarrow.parquet as pq

    from tests.runs import run_build

    plain, starts, copies = _expanding(tmp_path)
    kept = {}
    for read in ("needed", "all"):
        raw = {"name": "expanding", "seed": 5, "shard": {"max_bytes": len(plain) // 8},
               "sources": [{"name": "code", "kind": "code", "lang": "Python",
                            "columns": {"path": "path"},
                            "reader": {"type": "jsonl", "paths": [f"file://{copies['gz']}"]}}],
               "stages": [], "tokenizer": {},
               "mixture": {"total_tokens": 10 * len(plain), "weights": {"code": 1},
                           "read": read, "pilot_units": 1}}
        result = run_build(raw, tmp_path, tmp_path / read)
        assert removed_reasons(tmp_path / read) == [], read
        kept[read] = sorted(pq.read_table(tmp_path / read / result.stats["output"]["dir"],
                                          columns=["id"]).column("id").to_pylist())
        assert len(result.plan.units["code"]) > 8, read  # with the units found past it
    assert kept["needed"] == kept["all"] == sorted(
        document_id("code", f"{copies['gz'].name}#@{offset}") for offset in starts)


def test_a_sample_reads_a_remote_file_past_its_estimate(ray_session: Any,
                                                        tmp_path: Path) -> None:
    """A sampled build (`sample: 0.9`, every unit of this file chosen, 90% of each one's
    rows kept by hash) reads the units planned past a `file://` gzip's estimate as
    units of the sample: their rows are sampled alike, none lost to a record."""
    import pyarrow.parquet as pq

    from tests.runs import run_build

    plain, starts, copies = _expanding(tmp_path)
    raw = {"name": "expanding", "seed": 5, "shard": {"max_bytes": len(plain) // 8},
           "sample": 0.9, "stages": [],
           "sources": [{"name": "code", "kind": "code", "lang": "Python",
                        "columns": {"path": "path"},
                        "reader": {"type": "jsonl", "paths": [f"file://{copies['gz']}"]}}]}
    listed = plan_units(*_reader(raw, tmp_path), 10**6, len(plain) // 8)
    result = run_build(raw, tmp_path, tmp_path / "run")
    assert removed_reasons(tmp_path / "run") == []
    assert len(result.plan.units["code"]) > len(listed)
    planned = listed[-1].payload["end"]  # the last listed unit's end: the rest came after
    ids = set(pq.read_table(tmp_path / "run" / result.stats["output"]["dir"],
                            columns=["id"]).column("id").to_pylist())
    past = {document_id("code", f"{copies['gz'].name}#@{offset}") for offset in starts
            if offset >= planned}
    assert 0.8 * len(past) < len(ids & past) < len(past)  # about 90% of them
    assert 0.8 * len(starts) < len(ids) < len(starts)


def test_remote_sizes_are_kept_by_the_objects_stamps(
        tmp_path: Path, s3_env: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next process (a resume, `plan` again) reads no head of unchanged objects;
    an object rewritten with other bytes (another ETag) is sized again."""
    _, plain, _ = _corpus(tmp_path)
    copies = _compressed_copies(tmp_path, plain)
    client = s3_env.client()
    for kind in ("zst frames", "gz"):
        client.upload_file(str(copies[kind]), BUCKET, f"kept/{copies[kind].name}")
    paths = [f"s3://{BUCKET}/kept/*"]
    fetched = _Fetched(monkeypatch)
    first = _plan_and_read_units(paths, tmp_path, len(plain) // 3)
    assert len(fetched.ranged) == 3  # 18 bytes of the zstd, then both samples
    monkeypatch.setattr(compressed, "_SIZED", {})  # as in a new process
    fetched = _Fetched(monkeypatch)
    assert _plan_and_read_units(paths, tmp_path, len(plain) // 3) == first
    assert fetched.ranged == []
    half = plain[:len(plain) // 2]
    client.put_object(Bucket=BUCKET, Key=f"kept/{copies['gz'].name}",
                      Body=gzip.compress(half, mtime=0))
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # a new listing, as a new process has
    monkeypatch.setattr(compressed, "_SIZED", {})
    fetched = _Fetched(monkeypatch)
    changed = _plan_and_read_units(paths, tmp_path, len(plain) // 3)
    assert len(fetched.ranged) == 3 and changed != first


@pytest.mark.slow
def test_a_remote_build_is_the_same_for_any_worker_count_and_after_a_kill(
        tmp_path: Path, s3_env: S3Server) -> None:
    """A build reading two S3 compressed files in many units: byte-identical run files
    with 1 and 2 workers, and after a kill at the first marker and a resume."""
    from tests.test_run_dir import _kill_after_first_marker

    records, plain, _ = _corpus(tmp_path)
    copies = _compressed_copies(tmp_path, plain)
    client = s3_env.client()
    for kind in ("zst frames", "gz"):
        client.upload_file(str(copies[kind]), BUCKET, f"build/{copies[kind].name}")
    # and a gzip that expands far past its first 64 KiB's estimate: read to its end
    expanding, starts, more = _expanding(tmp_path)
    client.upload_file(str(more["gz"]), BUCKET, f"build/{more['gz'].name}")
    manifest = {"name": "remote", "stages": [], "shard": {"max_bytes": len(plain) // 6},
                "sources": [{"name": "code", "kind": "code", "columns": {"path": "path"},
                             "reader": {"type": "jsonl", "paths": [
                                 f"s3://{BUCKET}/build/*.jsonl.*"]}}]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # s3_env's too
    runs: dict[str, dict[str, str]] = {}
    for name, workers in (("one", "1"), ("two", "2")):
        args = ["build", "-m", str(tmp_path / "m.yaml"), "--run-dir", str(tmp_path / name),
                "--progress", "none", "--workers", workers]
        done = subprocess.run([*CLI, *args], cwd=REPO, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        runs[name] = digest(tmp_path / name)
    assert runs["one"] == runs["two"]
    stats = json.loads((tmp_path / "one" / "stats.json").read_text())
    assert removed_reasons(tmp_path / "one") == []  # no unreadable_file: every line read
    assert stats["output"]["docs"] == 2 * len(records) + len(starts)
    assert len(stats["output"]["shards"]) > 6
    args = ["build", "-m", str(tmp_path / "m.yaml"), "--run-dir", str(tmp_path / "killed"),
            "--progress", "none", "--workers", "1"]
    _kill_after_first_marker(args, tmp_path / "killed")
    resumed = subprocess.run([*CLI, *args], cwd=REPO, env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert digest(tmp_path / "killed") == runs["one"]
    # killed once a unit planned past the estimate has finished: the resumed run plans
    # those units again from the marker of the unit that found them
    listed = len(plan_units(*_reader(manifest, tmp_path), 10**6, len(plain) // 6))
    later = tmp_path / "killed-later"
    args = ["build", "-m", str(tmp_path / "m.yaml"), "--run-dir", str(later),
            "--progress", "none", "--workers", "1"]
    process = subprocess.Popen([*CLI, *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    markers = later / "markers" / "01-ingest"
    deadline = time.time() + 180
    while time.time() < deadline and len(list(markers.glob("*.json"))) <= listed:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert len(list(markers.glob("*.json"))) > listed and not (later / "stats.json").exists()
    resumed = subprocess.run([*CLI, *args], cwd=REPO, env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert digest(later) == runs["one"]


def _reader(raw: dict[str, Any], folder: Path) -> tuple[Any, Any]:
    spec = parse_manifest(raw, "m", folder).sources[0]
    return spec.reader, spec.info()


def test_a_local_count_is_kept_by_the_files_stamp(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """gzip, bz2, xz and unsized zstd are decompressed to count them at the first plan
    only: a second plan reads the count kept under $LEMUR_DATA_CACHE; a rewrite of the
    file (a new stamp) is counted again."""
    _, plain, _ = _corpus(tmp_path)
    copies = _compressed_copies(tmp_path, plain)
    counted: list[int] = []
    real = compressed.decompressed

    def counting(raw: Any, path: str, *args: Any) -> Any:
        stream = real(raw, path, *args)
        read1 = stream.read1

        def measured(size: int = -1) -> bytes:
            chunk = read1(size)
            counted.append(len(chunk))
            return chunk
        stream.read1 = measured
        return stream

    monkeypatch.setattr(compressed, "decompressed", counting)
    counts = ("gz", "bz2", "xz", "zst frames")
    paths = [str(copies[kind]) for kind in counts]
    plan = lambda: _plan_and_read_units(paths, tmp_path, len(plain) // 3)  # noqa: E731
    first = plan()
    assert sum(counted) == len(counts) * len(plain)  # each decompressed once, whole
    counted.clear()
    assert plan() == first and sum(counted) == 0  # the second plan decompresses nothing
    gz = copies["gz"]
    gz.write_bytes(gz.read_bytes())  # same bytes, a new change time: counted again
    assert plan() == first and sum(counted) == len(plain)
    assert len(list((tmp_path / "cache" / "jsonl-counts").glob("*.json"))) == len(counts) + 1


def _plan_and_read_units(paths: list[str], folder: Path, max_bytes: int) -> list[dict]:
    manifest = parse_manifest({"name": "t", "sources": [
        {"name": "code", "kind": "code", "reader": {"type": "jsonl", "paths": paths}}]},
        "m", folder)
    spec = manifest.sources[0]
    return [u.payload for u in plan_units(spec.reader, spec.info(), 10**6, max_bytes)]
