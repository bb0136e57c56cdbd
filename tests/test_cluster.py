"""A real two-node Ray cluster started with `ray start`: same bytes as a local run,
`ray job submit` works, and a node killed mid-stage does not change the output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.cluster import LocalCluster, cluster_env
from tests.realdata import STDLIB
from tests.runs import digest, run_build

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "lemur_data.pipeline.cli"]


@pytest.fixture(scope="module")
def cluster():
    started = LocalCluster().start(nodes=2)
    yield started
    started.stop()


def corpus(tmp_path: Path) -> dict:
    tree = tmp_path / "tree"
    for package in ("email", "json", "http", "logging", "xml", "urllib", "asyncio",
                    "concurrent", "importlib", "multiprocessing", "unittest", "sqlite3",
                    "ctypes", "tomllib", "zoneinfo", "wsgiref", "html", "dbm"):
        shutil.copytree(STDLIB / package, tree / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(STDLIB / "json", tree / "vendor" / "json",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return {"name": "cluster", "seed": 11, "shard": {"max_docs": 6},
            "sources": [{"name": "tree", "kind": "code",
                         "reader": {"type": "tree", "root": str(tree), "repo_depth": 1}}],
            "stages": [{"exact_dedup": {"partitions": 4}},
                       {"minhash": {"partitions": 4, "verify": True}}]}


def build_on(address: str, manifest: Path, run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "build", "--manifest", str(manifest), "--run-dir", str(run_dir),
                           "--ray-address", address, "--progress", "log"],
                          cwd=REPO, env=cluster_env(), capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def reference(ray_session, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The manifest both cluster builds run, and the digest of its build on the local Ray:
    built once for the module (the two tests compared two builds of the same bytes)."""
    folder = tmp_path_factory.mktemp("cluster")
    raw = corpus(folder)
    manifest = folder / "m.yaml"
    manifest.write_text(yaml.safe_dump(raw))
    run_build(raw, folder, folder / "local")
    return manifest, digest(folder / "local")


@pytest.mark.slow
def test_cluster_build_and_job_submit_match_local(cluster: LocalCluster,
                                                  reference: tuple[Path, dict],
                                                  tmp_path: Path) -> None:
    manifest, expected = reference

    result = build_on(cluster.address, manifest, tmp_path / "on-cluster")
    assert result.returncode == 0, result.stderr
    assert digest(tmp_path / "on-cluster") == expected

    job = subprocess.run(
        ["ray", "job", "submit", "--address", cluster.dashboard, "--",
         "lemur-data", "build", "--manifest", str(manifest),
         "--run-dir", str(tmp_path / "as-job"), "--progress", "log"],
        cwd=REPO, env=cluster_env(), capture_output=True, text=True, timeout=600)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert "kept" in job.stdout
    assert digest(tmp_path / "as-job") == expected


_PROBE = """
import json, os, sys
from lemur_data.pipeline import executor
from lemur_data.stages.base import Phase, Task

def probe():
    import pyarrow as pa
    return {"pool": pa.default_memory_pool().backend_name, "pid": os.getpid(),
            "env": [os.environ.get(k) for k in ("ARROW_DEFAULT_MEMORY_POOL", "MALLOC_ARENA_MAX")]}

executor.start(sys.argv[1])
executor.connect(sys.argv[1])
tasks = [Task(str(n), probe) for n in range(3)]
print(json.dumps(executor.run_phase(Phase("probe", tasks), sys.argv[2], 1)))
executor.shutdown()
"""


@pytest.mark.slow
def test_cluster_workers_set_their_arrow_pool_themselves(cluster: LocalCluster,
                                                         tmp_path: Path) -> None:
    """The cluster's workers were started without ARROW_DEFAULT_MEMORY_POOL (cluster_env),
    and the build asks Ray for no runtime_env (which costs new workers each build):
    each worker sets it before pyarrow is imported (pipeline/worker_env.py), so Arrow's
    C++ threads use the system allocator, whose freed pages malloc_trim returns."""
    result = subprocess.run([sys.executable, "-c", _PROBE, cluster.address, str(tmp_path)],
                            cwd=REPO, env=cluster_env(), capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    summaries = json.loads(result.stdout.strip().splitlines()[-1])
    assert [s["pool"] for s in summaries] == ["system"] * 3, summaries
    assert all(s["env"] == ["system", None] for s in summaries), summaries
    assert "Traceback" not in result.stderr, result.stderr[-3000:]


@pytest.mark.slow
def test_worker_node_killed_mid_stage(cluster: LocalCluster, reference: tuple[Path, dict],
                                      tmp_path: Path) -> None:
    manifest, expected = reference
    run_dir = tmp_path / "faulty"
    node = cluster.processes(cluster.temp_dirs[1])
    process = subprocess.Popen(
        [*CLI, "build", "--manifest", str(manifest), "--run-dir", str(run_dir),
         "--ray-address", cluster.address, "--progress", "none"],
        cwd=REPO, env=cluster_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    markers = run_dir / "markers" / "01-ingest"
    deadline = time.time() + 300
    while time.time() < deadline and len(list(markers.glob("*.json"))) < 2:
        time.sleep(0.05)
    killed = cluster.kill_node(cluster.temp_dirs[1], node)
    assert killed > 0
    assert not (run_dir / "stats.json").exists(), "the run finished before the node died"
    out, err = process.communicate(timeout=600)
    print(f"after the node died the run {'finished' if process.returncode == 0 else 'failed'}")
    if process.returncode != 0:  # Ray gave up on the task: the same command resumes it
        resumed = build_on(cluster.address, manifest, run_dir)
        assert resumed.returncode == 0, resumed.stderr
    assert digest(run_dir) == expected
    cluster.temp_dirs[1] = cluster.add_node()  # leave two nodes for later tests
