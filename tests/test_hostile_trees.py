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


def test_a_run_folder_inside_the_tree_is_not_read_back_in(ray_session, tmp_path: Path) -> None:
    from tests.runs import run_build

    shutil.copytree(STDLIB / "json", tmp_path / "tree", ignore=shutil.ignore_patterns("__py*"))
    raw = {"name": "inside", "sources": [
        {"name": "t", "kind": "code", "reader": {"type": "tree", "root": "tree"}}]}
    first = tmp_path / "tree" / "out"  # the run folder sits in the tree it reads
    run_build(raw, tmp_path, first)
    assert (first / "manifest.json").is_file() and (first / "README.md").is_file()
    rows = _read(tmp_path)
    assert rows["out"]["reason"] == "run_folder" and "lemur-data run folder" in \
        rows["out"]["detail"]
    assert not [p for p in rows if p.startswith("out/")]  # no card, manifest, shard, marker
    assert {p for p, r in rows.items() if r["reason"] is None} == {
        p.name for p in (STDLIB / "json").glob("*.py")}
    # a rerun of the same build sees the same input, not its own earlier output
    second = run_build(raw, tmp_path, tmp_path / "again")
    assert second is not None


def test_an_unreadable_subfolder_is_recorded(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    shutil.copytree(STDLIB / "json", tmp_path / "tree", ignore=shutil.ignore_patterns("__py*"))
    shutil.copytree(STDLIB / "email" / "mime", tmp_path / "tree" / "locked",
                    ignore=shutil.ignore_patterns("__py*"))
    (tmp_path / "tree" / "locked").chmod(0)
    # root reads any folder: the reader runs without the capabilities that allow it
    drop = (["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
            if os.geteuid() == 0 else [])
    code = ("import json, sys; from pathlib import Path\n"
            "from tests.test_hostile_trees import _read\n"
            "rows = _read(Path(sys.argv[1]))\n"
            "print(json.dumps({p: [r['reason'], r['detail']] for p, r in rows.items()}))")
    try:
        out = subprocess.run([*drop, sys.executable, "-c", code, str(tmp_path)],
                             capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parents[1])
    finally:
        (tmp_path / "tree" / "locked").chmod(0o755)
    rows = json.loads(out.stdout.splitlines()[-1])
    assert rows["locked"][0] == "unreadable_file", rows
    assert "folder not listed (Permission denied)" in rows["locked"][1]
    assert rows["decoder.py"][0] is None  # the rest of the tree is read


def test_disk_full_while_packing_names_the_shard_and_leaves_no_temporary(
        tmp_path: Path) -> None:
    """The Megatron shard writer on a 64 KiB tmpfs (`unshare -rm`, no root needed): the
    error names the .bin it could not write, and no `.tmp-*.bin` is left behind."""
    import os
    import subprocess
    import sys

    full = tmp_path / "full"
    full.mkdir()
    code = ("import os, sys, numpy as np\n"
            "from lemur_data.stages.mix.indexed_dataset import ShardedWriter\n"
            "w = ShardedWriter(sys.argv[1], 'code', np.dtype(np.uint16), 1 << 30)\n"
            "tokens = np.arange(2_000_000, dtype=np.uint16)\n"
            "try:\n"
            "    for _ in range(4):\n"
            "        w.add(tokens, np.array([500_000] * 4))\n"
            "    w.close()\n"
            "except OSError as error:\n"
            "    print('ERROR', error)\n"
            "print('LEFT', sorted(os.listdir(sys.argv[1])))\n")
    script = (f"mount -t tmpfs -o size=64k tmpfs {full} && "
              f"{sys.executable} -c \"$0\" {full}")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script, code], capture_output=True,
                          text=True, timeout=120, env=env,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    error = next(line for line in done.stdout.splitlines() if line.startswith("ERROR"))
    assert "No space left on device" in error and "code_00000.bin" in error, error
    left = next(line for line in done.stdout.splitlines() if line.startswith("LEFT"))
    assert ".tmp-" not in left, left
