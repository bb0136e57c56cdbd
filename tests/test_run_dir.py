"""The run folder: a build writes and deletes only what it made, and a resume never
mixes two listings of its input (issue 32)."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from lemur_data.pipeline.build import RunDirError, build, prepare_run_dir
from lemur_data.pipeline.manifest import parse_manifest
from tests.realdata import STDLIB, stack_parquet, stdlib_files
from tests.test_cli import CLI, REPO, cli


def _tree_manifest(root: Path) -> dict:
    return {"name": "guard", "seed": 3, "shard": {"max_docs": 4},
            "sources": [{"name": "tree", "kind": "code",
                         "reader": {"type": "tree", "root": str(root)}}],
            "stages": [{"exact_dedup": {"partitions": 2}}]}


def _hashes(folder: Path) -> dict[str, str]:
    """Every file and folder below `folder`, hidden ones too, with its content hash."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        found[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return found


def _temporary(name: str) -> str:
    return f".tmp-{uuid.uuid4().hex}-{name}"


def _foreign_folder(folder: Path) -> None:
    """A user's folder with what a run would otherwise overwrite or clean up."""
    (folder / "notes").mkdir(parents=True)
    (folder / "README.md").write_text("my own readme\n")
    (folder / "stats.json").write_text('{"mine": true}\n')
    (folder / _temporary("draft.txt")).write_text("a temporary of some other program\n")
    (folder / "notes" / _temporary("x.parquet")).write_bytes(b"PAR1")
    (folder / "notes" / ".tmp-keep").write_text("not ours\n")
    shutil.copy(STDLIB / "json" / "decoder.py", folder / "notes" / "decoder.py")


@pytest.mark.parametrize("cli_run", [False, True])
def test_a_foreign_folder_is_refused_untouched(tmp_path: Path, cli_run: bool) -> None:
    raw = _tree_manifest(STDLIB / "json")
    folder = tmp_path / "mine"
    _foreign_folder(folder)
    before = _hashes(folder)
    if cli_run:
        (tmp_path / "m.yaml").write_text(yaml.safe_dump(raw))
        result = cli("build", "-m", str(tmp_path / "m.yaml"), "--run-dir", str(folder),
                     "--progress", "none")
        assert result.returncode == 2, result.stderr
        message = " ".join(result.stderr.split())
        assert "is not empty" in message and "nothing was written or deleted" in message
        assert "README.md" in message and "Traceback" not in result.stderr
    else:
        with pytest.raises(RunDirError, match="holds no lemur-data run"):
            build(parse_manifest(raw, "m", tmp_path), str(folder), progress="none")
    assert _hashes(folder) == before


def test_a_record_that_is_not_a_run_is_refused_untouched(tmp_path: Path) -> None:
    manifest = parse_manifest(_tree_manifest(STDLIB / "json"), "m", tmp_path)
    folder = tmp_path / "other"
    _foreign_folder(folder)
    (folder / "manifest.json").write_text('{"name": "some other tool"}\n')
    before = _hashes(folder)
    with pytest.raises(RunDirError, match="not a lemur-data run record"):
        prepare_run_dir(manifest, str(folder))
    assert _hashes(folder) == before


def test_cleanup_touches_only_the_runs_own_paths(tmp_path: Path) -> None:
    manifest = parse_manifest(_tree_manifest(STDLIB / "json"), "m", tmp_path)
    run = tmp_path / "run"
    prepare_run_dir(manifest, str(run))  # an empty folder: this run's from now on
    ours = [run / "stages" / "01-ingest" / _temporary("shard-tree-00000.parquet"),
            run / "markers" / "01-ingest" / _temporary("tree-00000.json"),
            run / _temporary("stats.json")]
    theirs = [run / "notes" / _temporary("x.parquet"),  # a folder no run makes
              run / "stages" / ".tmp-keep"]  # not the name an atomic write gives
    for path in ours + theirs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"partial")
    prepare_run_dir(manifest, str(run))  # the resume of a killed run
    assert not any(p.exists() for p in ours)
    assert all(p.read_bytes() == b"partial" for p in theirs)


def _kill_after_first_marker(args: list[str], run: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    process = subprocess.Popen([*CLI, *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    markers = run / "markers" / "01-ingest"
    deadline = time.time() + 180
    while time.time() < deadline and not list(markers.glob("*.json")):
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert list(markers.glob("*.json")), "no marker before the deadline"
    assert not (run / "stats.json").exists(), "the run finished before the kill"


def _kept(run: Path) -> list[str]:
    stats = yaml.safe_load((run / "stats.json").read_text())
    out = run / stats["output"]["dir"]
    return [path for name in stats["output"]["shards"]
            for path in pq.read_table(out / name, columns=["path"]).column("path").to_pylist()]


def _kill_change_resume(tmp_path: Path, raw: dict, change, changed: str) -> Path:
    """Kill after the first marker, change the input, rerun: refused naming the change;
    with --relist the run starts over and holds the new input once."""
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(raw))
    run = tmp_path / "run"
    args = ["build", "-m", str(tmp_path / "m.yaml"), "--run-dir", str(run), "--progress", "none"]
    _kill_after_first_marker(args, run)
    change()
    refused = cli(*args)
    assert refused.returncode == 2, refused.stderr
    message = " ".join(refused.stderr.split())
    assert "the input changed since this run began" in message and changed in message
    assert "--relist" in message and not (run / "stats.json").exists()
    rebuilt = cli(*args, "--relist")
    assert rebuilt.returncode == 0, rebuilt.stderr
    again = cli(*args)  # the same listing now: resumes (nothing to do)
    assert again.returncode == 0, again.stderr
    return run


@pytest.mark.slow
def test_a_tree_changed_after_a_kill_is_never_mixed(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for package in ("json", "email", "http"):
        shutil.copytree(STDLIB / package, tree / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    added = tree / "json" / "aaa_added.py"

    def change() -> None:
        added.write_text("def added():\n    return 'a file the first listing lacked'\n")

    run = _kill_change_resume(tmp_path, _tree_manifest(tree), change, str(added))
    kept = _kept(run)
    assert "json/aaa_added.py" in kept
    assert len(kept) == len(set(kept))  # no document twice


@pytest.mark.slow
def test_a_parquet_file_changed_after_a_kill_is_never_mixed(tmp_path: Path) -> None:
    data = tmp_path / "stack.parquet"
    files = stdlib_files("email", limit=24)
    stack_parquet(data, files[:20], row_group_size=4)
    raw = {"name": "guardpq", "shard": {"max_docs": 4},
           "sources": [{"name": "stack", "kind": "code",
                        "columns": {"text": "content", "path": "max_stars_repo_path"},
                        "reader": {"type": "parquet", "paths": [str(data)]}}],
           "stages": [{"exact_dedup": {"partitions": 2}}]}

    def change() -> None:  # the file rewritten with more rows (and row groups)
        stack_parquet(data, files, row_group_size=4)

    run = _kill_change_resume(tmp_path, raw, change, str(data))
    kept = _kept(run)
    assert len(kept) == len(set(kept))
    assert len(kept) > 20  # the rows the first listing did not have are in


def _listed(tree: Path, run: Path) -> None:
    """Plan and record the run's listing, as `build` does before its first task."""
    from lemur_data.pipeline.planner import list_units

    manifest = parse_manifest(_tree_manifest(tree), "m.yaml", tree.parent)
    prepare_run_dir(manifest, str(run), list_units(manifest))


def test_a_rewrite_keeping_size_and_mtime_is_refused(tmp_path: Path) -> None:
    """A file rewritten in place with the same size, its old modification time put back
    (`touch -r`): size and mtime alone would call it the same file."""
    tree = tmp_path / "tree"
    shutil.copytree(STDLIB / "json", tree / "json", ignore=shutil.ignore_patterns("__pycache__"))
    run = tmp_path / "run"
    _listed(tree, run)
    target = tree / "json" / "decoder.py"
    before = target.stat()
    text = target.read_text()
    target.write_text(text.replace("def ", "fed ", 1))  # same size, other content
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = target.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(RunDirError) as refused:
        _listed(tree, run)
    assert f"{target}: rewritten or replaced with the same size" in str(refused.value)


def test_copies_of_the_input_with_other_times_give_the_same_run_files(tmp_path: Path) -> None:
    """Two copies of one input, at the same path, with other modification times: what the
    run publishes holds no trace of the times (the listing's record is in work/)."""
    tree = tmp_path / "tree"
    runs = [tmp_path / "a", tmp_path / "b"]
    for run, when in zip(runs, (10**18, 2 * 10**18), strict=True):
        if tree.exists():
            shutil.rmtree(tree)
        shutil.copytree(STDLIB / "json", tree / "json",
                        ignore=shutil.ignore_patterns("__pycache__"))
        for path in tree.rglob("*.py"):
            os.utime(path, ns=(when, when))
        _listed(tree, run)
    published = [{k: v for k, v in _hashes(run).items()
                  if not k.startswith(("work", "markers"))} for run in runs]
    assert published[0] == published[1]
    assert (runs[0] / "work" / "listing.json").is_file()
