"""Bad input: a clear error naming the file/key, or a quarantine with a reason.

Nothing is lost: every input record is either kept or in removed/ with a reason.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lemur_data.pipeline.executor import RunError
from lemur_data.stages.readers.common import ReaderError
from tests.realdata import (
    PURELIB,
    STDLIB,
    prose_paragraphs,
    stack_parquet,
    stdlib_files,
    write_jsonl,
)
from tests.runs import count_rows, run_build

STACK_COLUMNS = {"text": "content", "path": "max_stars_repo_path"}


def test_every_kind_of_bad_input_is_quarantined_and_counted(ray_session, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # parquet: one good file, one whose footer is cut off
    stack_parquet(data / "good.parquet", stdlib_files("json"))
    stack_parquet(data / "corrupt.parquet", stdlib_files("http"))
    raw = (data / "corrupt.parquet").read_bytes()
    (data / "corrupt.parquet").write_bytes(raw[: len(raw) // 2])
    # jsonl: a gzip cut mid-stream, and a file with broken records among good ones
    paragraphs = prose_paragraphs()[:200]
    write_jsonl(data / "web.jsonl.gz", [{"text": t} for t in paragraphs], "gz")
    whole = (data / "web.jsonl.gz").read_bytes()
    (data / "web.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    lines = [json.dumps({"text": paragraphs[0]}).encode(),
             json.dumps({"text": "Café crème, déjà vu"}).encode().replace(
                 b"Caf\\u00e9", "Café".encode("latin-1")),  # invalid UTF-8 bytes
             b'{"text": "unterminated',
             json.dumps({"text": "   \n\t "}).encode(),
             json.dumps({"body": paragraphs[1]}).encode(),
             json.dumps({"text": paragraphs[2]}).encode()]
    (data / "mixed.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    # a source tree with a binary file, a latin-1 file, an empty file, an oversize file
    tree = tmp_path / "tree"
    shutil.copytree(STDLIB / "json", tree / "json", ignore=shutil.ignore_patterns("__pycache__"))
    # a venv without its own packages has no .so in purelib; the stdlib's are as real
    native = next(PURELIB.rglob("*.so"), None) or next((STDLIB / "lib-dynload").glob("*.so"))
    shutil.copy(native, tree / "native.so.py")
    text = (STDLIB / "calendar.py").read_text()
    (tree / "latin1.py").write_bytes(("# Übersetzung: café\n" + text).encode("latin-1"))
    (tree / "empty.py").write_text("")
    big = (STDLIB / "pydoc_data" / "topics.py").read_bytes()
    (tree / "huge.py").write_bytes(big * (50 * 2**20 // len(big) + 1))  # a 50 MB document

    manifest = {"name": "bad", "shard": {"max_docs": 50}, "sources": [
        {"name": "stack", "kind": "code", "lang": "Python", "columns": STACK_COLUMNS,
         "reader": {"type": "parquet", "paths": ["data/*.parquet"]}},
        {"name": "web", "kind": "text", "reader": {"type": "jsonl", "paths": ["data/*.jsonl*"]}},
        {"name": "tree", "kind": "code", "reader": {"type": "tree", "root": "tree"}},
    ]}
    run = tmp_path / "run"
    run_build(manifest, tmp_path, run)
    stats = json.loads((run / "stats.json").read_text())
    ingest = stats["stages"][0]
    reasons = ingest["removed_by_reason"]
    assert reasons["ingest:unreadable_file"]["docs"] == 2  # corrupt parquet + truncated gzip
    assert reasons["ingest:invalid_utf8"]["docs"] == 2  # jsonl line + latin-1 file
    assert reasons["ingest:invalid_json"]["docs"] == 1
    assert reasons["ingest:missing_text"]["docs"] == 1
    assert reasons["ingest:binary"]["docs"] == 1
    assert reasons["ingest:too_large"]["docs"] == 1
    assert reasons["ingest:empty"]["docs"] >= 2  # whitespace record, empty file (+ real ones)
    removed = pq.read_table(run / "removed").to_pylist()
    details = {r["reason"]: r["detail"] for r in removed}
    assert "corrupt.parquet" in next(r["path"] for r in removed
                                     if r["reason"] == "ingest:unreadable_file"
                                     and r["source"] == "stack")
    assert "read failed after line" in details["ingest:unreadable_file"] or any(
        "read failed after line" in (r["detail"] or "") for r in removed)
    # nothing lost: what was read is exactly what is kept plus what was removed
    kept = count_rows(run / "stages")
    assert kept + len(removed) == ingest["in"]["docs"]
    assert ingest["by_source"]["web"]["kept"]["docs"] >= 40  # rows before the truncation
    good_lines = [r for r in pq.read_table(run / "stages").to_pylist() if r["source"] == "web"]
    assert paragraphs[2] in {r["text"] for r in good_lines}


def test_missing_text_column_names_file_and_columns(ray_session, tmp_path: Path) -> None:
    stack_parquet(tmp_path / "stack.parquet", stdlib_files("json"))
    manifest = {"name": "nocol", "sources": [
        {"name": "stack", "kind": "code", "columns": {"text": "contents"},
         "reader": {"type": "parquet", "paths": ["stack.parquet"]}}]}
    with pytest.raises(RunError) as error:
        run_build(manifest, tmp_path, tmp_path / "run")
    message = str(error.value)
    assert "stack.parquet" in message and "'contents'" in message
    assert "max_stars_repo_path" in message  # lists the columns the file has


def test_fail_policy_stops_on_the_first_bad_file(ray_session, tmp_path: Path) -> None:
    payload = gzip.compress(b"".join(json.dumps({"text": t}).encode() + b"\n"
                                     for t in prose_paragraphs()[:100]))
    (tmp_path / "cut.jsonl.gz").write_bytes(payload[: len(payload) // 2])
    manifest = {"name": "strict", "sources": [
        {"name": "web", "kind": "text", "on_bad_file": "fail",
         "reader": {"type": "jsonl", "paths": ["cut.jsonl.gz"]}}]}
    with pytest.raises(RunError, match=r"cut\.jsonl\.gz: read failed after line \d+"):
        run_build(manifest, tmp_path, tmp_path / "run")


def test_paths_that_match_nothing_or_are_not_folders(ray_session, tmp_path: Path) -> None:
    manifest = {"name": "nothing", "sources": [
        {"name": "web", "kind": "text", "reader": {"type": "jsonl", "paths": ["nope/*.jsonl"]}}]}
    with pytest.raises(ReaderError, match=r"source 'web': pattern .*nope/\*\.jsonl.* matches no"):
        run_build(manifest, tmp_path, tmp_path / "run")
    manifest["sources"][0]["reader"] = {"type": "tree", "root": "missing-folder"}
    with pytest.raises(ReaderError, match="reader.root .*missing-folder.* is not a folder"):
        run_build(manifest, tmp_path, tmp_path / "run2")


def test_mistyped_text_column_names_file_column_and_type(ray_session, tmp_path: Path) -> None:
    stack_parquet(tmp_path / "stack.parquet", stdlib_files("json"))
    manifest = {"name": "types", "sources": [
        {"name": "stack", "kind": "code", "columns": {"text": "max_stars_count"},
         "reader": {"type": "parquet", "paths": ["stack.parquet"]}}]}
    with pytest.raises(RunError, match=r"stack\.parquet: text column 'max_stars_count' has "
                                       r"type int64, expected string"):
        run_build(manifest, tmp_path, tmp_path / "run")


def test_nul_bytes_in_records_and_files_matched_twice(ray_session, tmp_path: Path) -> None:
    paragraphs = prose_paragraphs()[:20]
    records = [{"text": t} for t in paragraphs]
    records[4]["text"] = paragraphs[4][:200] + "\x00\x00\x00" + paragraphs[4][200:]
    write_jsonl(tmp_path / "web.jsonl", records)
    manifest = {"name": "nul", "sources": [
        {"name": "web", "kind": "text",
         "reader": {"type": "jsonl", "paths": ["web.jsonl", "*.jsonl"]}}]}  # same file twice
    run_build(manifest, tmp_path, tmp_path / "run")
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    assert stats["input"]["docs"] == 20  # read once, not twice
    size = len(records[4]["text"].encode())
    (reason,) = stats["stages"][0]["removed_by_reason"].items()
    assert reason[0] == "ingest:binary"
    assert (reason[1]["docs"], reason[1]["bytes"]) == (1, size)
    assert reason[1]["by_source"] == {"web": {"docs": 1, "bytes": size}}


def test_a_file_that_vanishes_after_planning_is_quarantined(tmp_path: Path) -> None:
    from lemur_data.pipeline.manifest import parse_manifest
    from lemur_data.stages.ingest import plan_units, read_unit

    shutil.copytree(STDLIB / "json", tmp_path / "tree", ignore=shutil.ignore_patterns("__py*"))
    manifest = parse_manifest({"name": "gone", "sources": [
        {"name": "t", "kind": "code", "reader": {"type": "tree", "root": "tree"}}]}, "m", tmp_path)
    source = manifest.sources[0]
    (unit,) = plan_units(source.reader, source.info(), 100, 2**30)
    (tmp_path / "tree" / "decoder.py").unlink()
    table = read_unit(source.reader, source.info(), unit)
    row = next(r for r in table.to_pylist() if r["path"] == "decoder.py")
    assert row["reason"] == "unreadable_file" and "decoder.py" in row["detail"]
    assert table.num_rows == unit.docs_hint


def test_lone_surrogates_and_non_utf8_names_are_quarantined(ray_session, tmp_path: Path) -> None:
    """A JSON `\\ud800` (text or path) or a file named with latin-1 bytes: one quarantine
    record naming the file and line; the file's other documents are kept."""
    sources = stdlib_files("email", limit=6)
    records = [{"content": f.read_text(), "path": f.name} for f in sources]
    lines = [json.dumps(r) for r in records]
    # json.dumps writes a real surrogate as the escape "\ud800": what the dumps contain
    lines[1] = json.dumps({"content": records[1]["content"] + "\ud800", "path": "lone.py"})
    lines[3] = json.dumps({"content": records[3]["content"], "path": "\udc80bad.py"})
    (tmp_path / "stack.jsonl").write_text("\n".join(lines) + "\n")
    tree = tmp_path / "tree"
    shutil.copytree(STDLIB / "json", tree, ignore=shutil.ignore_patterns("__pycache__"))
    latin1 = bytes(tree) + b"/caf\xe9.py"
    with open(latin1, "wb") as handle:
        handle.write((STDLIB / "calendar.py").read_bytes())
    files = tmp_path / "files"
    files.mkdir()
    shutil.copy(STDLIB / "textwrap.py", files / "textwrap.txt")
    with open(bytes(files) + b"/na\xefve.txt", "wb") as handle:
        handle.write((STDLIB / "this.py").read_bytes())
    manifest = {"name": "surrogates", "sources": [
        {"name": "stack", "kind": "code", "lang": "Python",
         "columns": {"text": "content", "path": "path"},
         "reader": {"type": "jsonl", "paths": ["stack.jsonl"]}},
        {"name": "tree", "kind": "code", "reader": {"type": "tree", "root": "tree"}},
        {"name": "docs", "kind": "text", "reader": {"type": "files", "paths": ["files/*"]}},
    ]}
    run = tmp_path / "run"
    run_build(manifest, tmp_path, run)
    ingest = json.loads((run / "stats.json").read_text())["stages"][0]
    removed = [r for r in pq.read_table(run / "removed").to_pylist()
               if r["reason"] == "ingest:invalid_unicode"]
    details = sorted(r["detail"] for r in removed)
    assert details == [
        "caf\\xe9.py: file name is not UTF-8 (byte 0xE9)",
        "na\\xefve.txt: file name is not UTF-8 (byte 0xEF)",
        "stack.jsonl line 2: lone surrogate U+D800 in field 'text'",
        "stack.jsonl line 4: lone surrogate U+DC80 in field 'path'",
    ]
    assert ingest["removed_by_reason"]["ingest:invalid_unicode"]["docs"] == 4
    kept = pq.read_table(run / "stages", columns=["path", "source"]).to_pylist()
    stack_kept = {r["path"] for r in kept if r["source"] == "stack"}
    assert {records[i]["path"] for i in (0, 2, 4, 5)} <= stack_kept  # the rest of the file
    assert "textwrap.txt" in {r["path"] for r in kept if r["source"] == "docs"}
    assert "decoder.py" in {r["path"] for r in kept if r["source"] == "tree"}
    assert ingest["in"]["docs"] == count_rows(run / "stages") + count_rows(run / "removed")
    assert ingest["in"]["docs"] == 6 + len(list(tree.iterdir())) + 2


def _special_tree(root: Path) -> None:
    """A real package copy plus a FIFO, a socket, a device node and symlinks.

    Making a device node needs root, so `null.py` is a link to the machine's own
    /dev/null: with follow_symlinks the reader meets a real character device through it,
    as a non-root user can arrange. As root, `mknod.py` is a device node of its own."""
    import os
    import socket
    import stat

    shutil.copytree(STDLIB / "json", root, ignore=shutil.ignore_patterns("__pycache__"))
    os.mkfifo(root / "pipe.py")
    os.mkfifo(root / "LICENSE")  # the license sniffer must not open it either
    (root / "null.py").symlink_to(os.devnull)
    if os.geteuid() == 0:
        os.mknod(root / "mknod.py", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "agent.sock"))
    sock.close()  # the socket file stays
    (root / "linked.py").symlink_to("decoder.py")
    (root / "up").symlink_to("..")  # a loop, if links to folders were walked


def test_fifo_socket_device_in_a_tree_do_not_hang(tmp_path: Path) -> None:
    """Planning and reading finish within a timeout (a FIFO used to block open())."""
    import subprocess
    import sys

    _special_tree(tmp_path / "tree")
    script = (
        "import json, sys\nfrom pathlib import Path\n"
        "from lemur_data.pipeline.manifest import parse_manifest\n"
        "from lemur_data.stages.ingest import plan_units, read_unit\n"
        "m = parse_manifest({'name': 'x', 'sources': [{'name': 't', 'kind': 'code',"
        " 'reader': {'type': 'tree', 'root': 'tree', 'follow_symlinks': FOLLOW}}]},"
        " 'm', Path('.'))\n"
        "s = m.sources[0]\n"
        "rows = [r for u in plan_units(s.reader, s.info(), 100, 2**30)"
        " for r in read_unit(s.reader, s.info(), u).to_pylist()]\n"
        "print(json.dumps({r['path']: [r['reason'], r['detail']] for r in rows}))\n")
    def read(follow: bool) -> dict[str, list[str | None]]:
        done = subprocess.run([sys.executable, "-c", script.replace("FOLLOW", str(follow))],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              check=True)
        return json.loads(done.stdout)

    for follow in (False, True):
        rows = read(follow)
        assert rows["pipe.py"] == ["not_regular_file", "pipe.py: named pipe (FIFO)"]
        assert rows["LICENSE"] == ["not_regular_file", "LICENSE: named pipe (FIFO)"]
        assert rows["agent.sock"] == ["not_regular_file", "agent.sock: socket"]
        assert rows["up"][0] == "symlink"
        assert rows["decoder.py"] == [None, None]
        if "mknod.py" in rows or os.geteuid() == 0:
            assert rows["mknod.py"] == ["not_regular_file", "mknod.py: character device"]
        if follow:
            assert rows["null.py"] == ["not_regular_file", "null.py: character device"]
            assert rows["linked.py"] == [None, None]
        else:
            assert rows["linked.py"][0] == rows["null.py"][0] == "symlink"
            assert "follow_symlinks" in rows["linked.py"][1]


def test_special_entries_are_recorded_in_removed(ray_session, tmp_path: Path) -> None:
    _special_tree(tmp_path / "tree")
    manifest = {"name": "special", "sources": [
        {"name": "t", "kind": "code", "reader": {"type": "tree", "root": "tree",
                                                   "follow_symlinks": True}}]}
    run = tmp_path / "run"
    run_build(manifest, tmp_path, run)
    removed = {r["path"]: r["reason"] for r in pq.read_table(run / "removed").to_pylist()}
    assert {p: removed[p] for p in ("pipe.py", "LICENSE", "null.py", "agent.sock", "up")} == {
        "pipe.py": "ingest:not_regular_file", "LICENSE": "ingest:not_regular_file",
        "null.py": "ingest:not_regular_file", "agent.sock": "ingest:not_regular_file",
        "up": "ingest:symlink"}
    kept = pq.read_table(run / "stages", columns=["path", "text"]).to_pylist()
    linked = next(r["text"] for r in kept if r["path"] == "linked.py")  # followed
    assert linked == (STDLIB / "json" / "decoder.py").read_text()
    stats = json.loads((run / "stats.json").read_text())["stages"][0]
    assert stats["in"]["docs"] == count_rows(run / "stages") + len(removed)


@pytest.mark.slow
def test_disk_full_names_the_file(tmp_path: Path) -> None:
    """A run folder on a 48 KiB tmpfs: the error names the file it could not write.

    The tmpfs is mounted in a user and mount namespace of its own (`unshare -rm`), which
    needs no root; the build runs inside it with a Ray of its own, as a user's would."""
    import sys

    full = tmp_path / "full"
    full.mkdir()
    manifest = tmp_path / "m.yaml"
    manifest.write_text(json.dumps({"name": "full", "sources": [
        {"name": "t", "kind": "code", "reader": {"type": "tree", "root": str(STDLIB / "email")}}]}))
    build = (f"mount -t tmpfs -o size=48k tmpfs {full} && {sys.executable} -m "
             f"lemur_data.pipeline.cli build --manifest {manifest} --run-dir {full}/run "
             f"--progress none --workers 1; code=$?; find {full} > {tmp_path}/left; exit $code")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = subprocess.run(["unshare", "-rm", "sh", "-c", build], capture_output=True,
                          text=True, timeout=300, env=env)
    assert done.returncode == 1, done.stderr
    message = " ".join(done.stderr.split())
    assert "No space left on device" in message and "shard-t-00000.parquet" in message, message
    left = (tmp_path / "left").read_text()
    assert "manifest.json" in left and ".tmp-" not in left  # the partial write is gone
