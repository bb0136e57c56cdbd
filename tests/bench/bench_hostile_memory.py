"""Peak worker memory on hostile jsonl input, against the bound of issue 32.

    python -m tests.bench.bench_hostile_memory [--max-doc-mib 16] [--line-mb 400] [--no-remote]
    python -m tests.bench.bench_hostile_memory --cost [--cost-mb 64]
    python -m tests.bench.bench_hostile_memory --plan-cost [--plan-files 2000]

Builds (ingest only, one real Ray worker) each input below from real text (standard-
library files, JSON-escaped, repeated), and prints the peak resident memory of the
ingest task (the executor's per-task log, LEMUR_TASK_MEMORY_LOG) against the bound:
the control's peak (the baseline) + 2x `max_doc_bytes`.

- control: a jsonl.gz of ordinary documents (the baseline);
- gz line: one line of `--line-mb` MB inside a gzip of a few MB;
- zst line: the same line in a zstd file of tens of KB;
- zst bomb: one line of 4x that (1.6 GB) in a zstd file of about 0.2 MB;
- zst lines: one real document's line repeated to 4x `--line-mb` (many lines, each
  fine, a bomb together) in a zstd file of tens of KB;
- growing: a plain jsonl to which 512 MB of documents are appended as soon as the build
  has listed its input (run/work/listing.json written), before its ingest task reads it;
- zst docs: real documents repeated to 128 MB in a zstd stating its size (the zstd
  CLI's way): a big ordinary file, 32 units;
- s3 control, s3 zst lines, s3 gz line, s3 zst docs: those files on a real
  S3-compatible server (moto_server, tests/s3server.py) on 127.0.0.1, read as s3://
  URLs, each s3 row against the s3 control (the worker imports s3fs, aiobotocore and
  aiohttp to read them); `--no-remote` skips them;
- s3 gz expanding (remote only): the control's documents, then one of them repeated to
  64 MB, in a gzip whose first 64 KiB estimate a few MB: planned from that estimate, its
  last unit finds the rest and the units planned after it read every line (the line
  under the row says how many documents came out, or what was not read).

Every build uses `shard.max_bytes` 4 MB, so the control's unit is small.

`--cost`: what cutting a compressed file into units of its decompressed bytes costs
(unit k decompresses the k ranges before its own): CPU seconds of planning and reading
`--cost-mb` MB of standard-library files as jsonl lines, plain, gzip and zstd, in one
unit and cut into 4, 16 and 32, in this process (no Ray); then the gz line input planned
with `shard.max_bytes` 4 and 256 MiB.

`--plan-cost`: what planning remote compressed files costs (lemur-90b lists 59,166
SlimPajama .jsonl.zst files on the Hub): `--plan-files` small jsonl files of real
documents on moto_server (127.0.0.1), as zstd stating its size and as gzip, planned
with `plan_units`: ranged reads, bytes fetched, wall and CPU seconds, per file.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

import yaml
import zstandard

REPO = Path(__file__).resolve().parents[2]
STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _documents() -> list[bytes]:
    return [json.dumps({"content": f.read_text(), "path": str(f.relative_to(STDLIB))}).encode()
            + b"\n" for f in sorted((STDLIB / "json").glob("*.py"))
            + sorted((STDLIB / "email").glob("*.py"))]


def _huge_line(out: object, megabytes: int) -> None:
    """A good line, one line of `megabytes` MB (encoder.py's JSON-escaped text repeated:
    under gzip's 32 KiB window, so it compresses), then a good line."""
    write = out.write  # type: ignore[attr-defined]
    unit = json.dumps((STDLIB / "json" / "encoder.py").read_text())[1:-1].encode()
    good = _documents()[0]
    write(good + b'{"content": "')
    for _ in range(megabytes * (1 << 20) // len(unit) + 1):
        write(unit)
    write(b'"}\n' + good)


def make_inputs(folder: Path, line_mb: int) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"control": folder / "control.jsonl.gz", "gz line": folder / "line.jsonl.gz",
             "zst line": folder / "line.jsonl.zst", "zst bomb": folder / "bomb.jsonl.zst",
             "zst lines": folder / "lines.jsonl.zst",
             "growing": folder / "growing.jsonl"}
    with gzip.open(paths["control"], "wb") as out:
        for doc in _documents():
            out.write(doc)
    with gzip.open(paths["gz line"], "wb", compresslevel=6) as out:
        _huge_line(out, line_mb)
    level = zstandard.ZstdCompressor(level=19, write_content_size=False)
    for name, size in (("zst line", line_mb), ("zst bomb", 4 * line_mb)):
        with paths[name].open("wb") as raw, level.stream_writer(raw) as out:
            _huge_line(out, size)
    line = _documents()[1]
    with paths["zst lines"].open("wb") as raw, level.stream_writer(raw) as out:
        for _ in range(4 * line_mb * (1 << 20) // len(line)):
            out.write(line)
    paths["growing"].write_bytes(b"".join(_documents()))
    docs = b"".join(_documents())
    paths["zst docs"] = folder / "docs.jsonl.zst"
    with paths["zst docs"].open("wb") as out:  # states its size, as the zstd CLI does
        out.write(zstandard.ZstdCompressor(level=3).compress(docs * ((128 << 20) // len(docs))))
    return paths


def _remote_inputs(stack: contextlib.ExitStack, work: Path, paths: dict[str, Path],
                   ) -> dict[str, str]:
    """Starts moto_server on 127.0.0.1 (stopped with `stack`), uploads the remote rows'
    files and sets its endpoint and test credentials in the environment, where s3fs
    and the build's workers find them."""
    from tests.s3server import TEST_CREDENTIALS, s3_server

    server = stack.enter_context(s3_server(work / "moto.log"))
    os.environ.update({**TEST_CREDENTIALS, "AWS_ENDPOINT_URL": server.endpoint})
    client = server.client()
    client.create_bucket(Bucket="hostile")
    rows: dict[str, str] = {}
    expanding = paths["control"].with_name("expanding.jsonl.gz")
    docs = _documents()
    with gzip.open(expanding, "wb") as out:  # compresses far better past its first 64 KiB
        out.write(b"".join(docs))
        for _ in range((64 << 20) // len(docs[1])):
            out.write(docs[1])
    for name, path in (*((n, paths[n]) for n in ("control", "zst lines", "gz line",
                                                   "zst docs")),
                       ("gz expanding", expanding)):
        client.upload_file(str(path), "hostile", path.name)
        rows[f"s3 {name}"] = f"s3://hostile/{path.name}"
    return rows


def _unread(run: Path) -> str:
    """How many documents a run put out, and what its reader left unread, if anything."""
    import pyarrow.parquet as pq

    docs = json.loads((run / "stats.json").read_text())["output"]["docs"]
    for shard in sorted(run.glob("removed/**/*.parquet")):
        table = pq.read_table(shard, columns=["reason", "detail"])
        for reason, detail in zip(table.column("reason").to_pylist(),
                                  table.column("detail").to_pylist(), strict=True):
            if reason == "ingest:unreadable_file":
                return f"{docs:,} documents out; not read: {detail}"
    return f"{docs:,} documents out, every line read"


def _grow(path: Path, listed: Path, stop: threading.Event, limit: int) -> None:
    """Once the build has listed its input, append `limit` bytes of documents (an older
    version recorded the listing at the run's top: either will do, to compare)."""
    while not listed.exists() and not (listed.parent.parent / listed.name).exists():
        if stop.wait(0.005):
            return
    docs = b"".join(_documents())
    with path.open("ab") as out:
        for _ in range(limit // len(docs)):
            out.write(docs)


def _grew(run: Path) -> str:
    """The size the growing file had when its last unit read it (its quarantine record)."""
    import pyarrow.parquet as pq

    for shard in sorted(run.glob("removed/**/*.parquet")):
        for detail in pq.read_table(shard, columns=["detail"]).column("detail").to_pylist():
            if detail and "grew from" in detail:
                return detail.split("; ")[0] if detail.startswith("grew") else detail
    return "not seen"


def build(path: Path | str, folder: Path, max_doc_mib: int, grow: bool) -> tuple[float, float]:
    """(MB at its start, peak MB) of the ingest task with the largest peak."""
    name = str(path).rsplit("/", 1)[-1]
    manifest = {"name": f"hostile-{name}".replace(".", "-"), "stages": [],
                "shard": {"max_bytes": "4MB"},
                "sources": [{"name": "j", "kind": "code", "lang": "Python",
                             "max_doc_bytes": f"{max_doc_mib}MiB",
                             "columns": {"text": "content", "path": "path"},
                             "reader": {"type": "jsonl", "paths": [str(path)]}}]}
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest))
    log = folder / "tasks.tsv"
    stop = threading.Event()
    listed = folder / "run" / "work" / "listing.json"
    writer = (threading.Thread(target=_grow, args=(Path(path), listed, stop, 512 << 20))
              if grow else None)
    if writer:
        writer.start()
    try:
        subprocess.run([sys.executable, "-m", "lemur_data.pipeline.cli", "build", "--manifest",
                        str(folder / "manifest.yaml"), "--run-dir", str(folder / "run"),
                        "--progress", "none", "--workers", "1"],
                       cwd=REPO, check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "LEMUR_TASK_MEMORY_LOG": str(log)})
    finally:
        stop.set()
        if writer:
            writer.join()
    tasks = [(float(fields[2]), float(fields[3])) for fields in
             (line.split("\t") for line in log.read_text().splitlines())
             if "ingest" in fields[0]]
    return max(tasks, key=lambda task: task[1])


def cost(megabytes: int) -> None:
    import time

    from lemur_data.pipeline.manifest import parse_manifest
    from lemur_data.stages.ingest import plan_units, read_unit

    folder = Path(tempfile.mkdtemp(prefix="bench-cost-"))
    lines, size = [], 0
    for path in sorted(STDLIB.rglob("*.py")):
        if size >= megabytes * 1_000_000:
            break
        lines.append(json.dumps({"text": path.read_text(errors="replace")}).encode() + b"\n")
        size += len(lines[-1])
    plain = b"".join(lines)
    (folder / "c.jsonl").write_bytes(plain)
    (folder / "c.jsonl.gz").write_bytes(gzip.compress(plain, compresslevel=6, mtime=0))
    (folder / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor(level=3).compress(plain))
    print(f"{len(plain) / 1e6:.1f} MB of jsonl ({len(lines)} stdlib files); CPU seconds of "
          "plan + read of every unit (best of 2)")
    print(f"{'file':<12} {'units':>5} {'plan s':>7} {'read s':>7} {'vs 1 unit':>9}")
    for name in ("c.jsonl", "c.jsonl.gz", "c.jsonl.zst"):
        manifest = parse_manifest({"name": "cost", "sources": [
            {"name": "j", "kind": "code", "reader": {"type": "jsonl", "paths": [name]}}]},
            "m", folder)
        source = manifest.sources[0]
        one = 0.0
        for parts in (1, 4, 16, 32):
            best = (float("inf"), float("inf"))
            for _ in range(2):
                began = time.process_time()
                units = plan_units(source.reader, source.info(), 10**9,
                                   -(-len(plain) // parts))
                planned = time.process_time()
                rows = sum(read_unit(source.reader, source.info(), u).num_rows for u in units)
                best = min(best, (planned - began, time.process_time() - planned))
                assert rows == len(lines) and len(units) == parts, (rows, len(units))
            one = one or sum(best)
            print(f"{name:<12} {parts:>5} {best[0]:>7.2f} {best[1]:>7.2f} "
                  f"{sum(best) / one:>8.2f}x", flush=True)
    # The hostile case: one 400 MB line in a 3.9 MB gzip, every unit past the first
    # decompressing through the line to find where its own lines start.
    with gzip.open(folder / "line.jsonl.gz", "wb", compresslevel=6) as out:
        _huge_line(out, 400)
    manifest = parse_manifest({"name": "cost", "sources": [
        {"name": "j", "kind": "code", "columns": {"text": "content"},
         "reader": {"type": "jsonl", "paths": ["line.jsonl.gz"]}}]}, "m", folder)
    source = manifest.sources[0]
    for mib in (4, 256):
        began = time.process_time()
        units = plan_units(source.reader, source.info(), 10**9, mib << 20)
        planned = time.process_time()
        for unit in units:
            read_unit(source.reader, source.info(), unit)
        print(f"400 MB line in {(folder / 'line.jsonl.gz').stat().st_size / 1e6:.1f} MB of "
              f"gzip, shard.max_bytes {mib} MiB: {len(units)} units, plan "
              f"{planned - began:.2f} s, read {time.process_time() - planned:.2f} s", flush=True)
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def plan_cost(files: int) -> None:
    import time

    import s3fs

    from lemur_data.pipeline.manifest import parse_manifest
    from lemur_data.stages.ingest import plan_units

    work = Path(tempfile.mkdtemp(prefix="bench-plan-"))
    docs = b"".join(_documents()[:8])
    bodies = {"zst": zstandard.ZstdCompressor(level=3).compress(docs),
              "gz": gzip.compress(docs, mtime=0)}
    fetched: list[int] = []
    cat = s3fs.S3FileSystem._cat_file

    async def counted(fs: object, *args: object, **kwargs: object) -> bytes:
        data = await cat(fs, *args, **kwargs)
        fetched.append(len(data))
        return data

    s3fs.S3FileSystem._cat_file = counted
    with contextlib.ExitStack() as stack:
        from tests.s3server import TEST_CREDENTIALS, s3_server

        server = stack.enter_context(s3_server(work / "moto.log"))
        os.environ.update({**TEST_CREDENTIALS, "AWS_ENDPOINT_URL": server.endpoint})
        client = server.client()
        client.create_bucket(Bucket="plan")
        for kind, body in bodies.items():
            for i in range(files):
                client.put_object(Bucket="plan", Key=f"{kind}/{i:06}.jsonl.{kind}", Body=body)
        print(f"{files} files of {len(docs):,} bytes of jsonl each, on moto_server "
              f"(127.0.0.1); load {os.getloadavg()[0]:.2f}")
        print(f"{'kind':<5} {'reads':>6} {'bytes':>10} {'per file':>9} {'wall s':>7} "
              f"{'CPU s':>6} {'ms/file':>8}")
        for kind in bodies:
            s3fs.S3FileSystem.clear_instance_cache()
            manifest = parse_manifest({"name": "plan", "sources": [
                {"name": "j", "kind": "text", "reader": {
                    "type": "jsonl", "paths": [f"s3://plan/{kind}/*.jsonl.{kind}"]}}]},
                "m", work)
            source = manifest.sources[0]
            fetched.clear()
            wall, cpu = time.perf_counter(), time.process_time()
            units = plan_units(source.reader, source.info(), 10**6, 256 << 20)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert len(units) == files
            print(f"{kind:<5} {len(fetched):>6} {sum(fetched):>10,} "
                  f"{sum(fetched) / files:>9.0f} {wall:>7.2f} {cpu:>6.2f} "
                  f"{1000 * wall / files:>8.2f}", flush=True)
    subprocess.run(["rm", "-rf", str(work)], check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "\n").splitlines()[0])
    parser.add_argument("--max-doc-mib", type=int, default=16)
    parser.add_argument("--line-mb", type=int, default=400)
    parser.add_argument("--only", nargs="*", metavar="INPUT",
                        help="run only these inputs besides the control (e.g. 'zst lines')")
    parser.add_argument("--cost", action="store_true",
                        help="CPU cost of cutting compressed files into units, then exit")
    parser.add_argument("--cost-mb", type=int, default=64)
    parser.add_argument("--plan-cost", action="store_true",
                        help="cost of planning remote compressed files, then exit")
    parser.add_argument("--plan-files", type=int, default=2000)
    parser.add_argument("--no-remote", action="store_true",
                        help="skip the s3 rows (moto_server on 127.0.0.1)")
    args = parser.parse_args()
    if args.cost:
        cost(args.cost_mb)
        return 0
    if args.plan_cost:
        plan_cost(args.plan_files)
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-hostile-"))
    paths = make_inputs(work / "inputs", args.line_mb)
    sizes = {name: path.stat().st_size for name, path in paths.items()}
    bound_mb = 2 * args.max_doc_mib * (1 << 20) / 1e6
    print(f"max_doc_bytes {args.max_doc_mib} MiB: bound = control peak + {bound_mb:.1f} MB")
    print("task start / peak: the worker's memory when the ingest task began and its peak "
          "during it; growth = peak - start")
    print(f"{'input':<12} {'file bytes':>12} {'start MB':>9} {'peak MB':>8} {'growth':>7} "
          f"{'peak over control':>18} {'bound':>6}  ok")
    control = 0.0
    rows: dict[str, Path | str] = dict(paths)
    server = contextlib.ExitStack()
    if not args.no_remote:
        rows |= _remote_inputs(server, work, paths)
    with server:
        for name, path in rows.items():
            if args.only and not name.endswith("control") and name not in args.only:
                continue
            folder = work / name.replace(" ", "-")
            folder.mkdir()
            start, peak = build(path, folder, args.max_doc_mib, grow=name == "growing")
            # s3 rows against the s3 control: s3fs, aiobotocore and aiohttp are memory too
            control = peak if name.endswith("control") else control
            over = peak - control
            size = sizes.get(name) or sizes.get(name.removeprefix("s3 "), 0) or \
                (work / "inputs" / str(path).rsplit("/", 1)[-1]).stat().st_size
            print(f"{name:<12} {size:>12,} {start:>9.1f} {peak:>8.1f} {peak - start:>7.1f} "
                  f"{over:>18.1f} {bound_mb:>6.1f}  {'yes' if over <= bound_mb else 'NO'}",
                  flush=True)
            if name == "growing":
                print(f"             ({_grew(folder / 'run')})")
            if name == "s3 gz expanding":
                print(f"             ({_unread(folder / 'run')})", flush=True)
    subprocess.run(["rm", "-rf", str(work)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
