"""The resident driver (pipeline/resident): builds given `--ray-address` are served by a
process kept for that cluster, on a real cluster started with `ray start`.

Served builds write the same bytes as a build in its own process; one driver serves
build after build; Ctrl-C and a killed client stop the build, and the same command then
resumes it; a second build at once runs in its own process; a driver whose code or
environment differs is replaced; a driver whose cluster stopped exits."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
import yaml

from lemur_data.pipeline.resident.place import DIR_ENV, Unavailable, folder, key
from tests.cluster import LocalCluster, cluster_env, free_port
from tests.realdata import STDLIB
from tests.runs import digest, run_build

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "lemur_data.pipeline.cli"]


# --- the key: which builds a resident driver may serve ---------------------------------

def test_key_follows_the_code_and_the_environment(tmp_path: Path) -> None:
    code = tmp_path / "stages"
    shutil.copytree(REPO / "stages", code, ignore=shutil.ignore_patterns("__pycache__"))
    environ = {"HOME": "/home/a", "AWS_PROFILE": "lab", "PWD": "/x", "SHLVL": "1"}
    first = key("127.0.0.1:6379", environ, [str(code)])
    assert key("127.0.0.1:6379", environ, [str(code)]) == first
    # what a shell changes between commands does not matter
    assert key("127.0.0.1:6379", {**environ, "PWD": "/y", "SHLVL": "3", "COLUMNS": "80"},
               [str(code)]) == first
    # another cluster: same code part, another cluster part
    other = key("127.0.0.1:6380", environ, [str(code)])
    assert other.split("-")[0] != first.split("-")[0]
    assert other.split("-")[1] == first.split("-")[1]
    # credentials or settings: another driver
    assert key("127.0.0.1:6379", {**environ, "AWS_PROFILE": "prod"}, [str(code)]) != first
    # an edited stage: another driver (same size, later mtime)
    module = code / "syntax.py"
    info = module.stat()
    os.utime(module, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))
    edited = key("127.0.0.1:6379", environ, [str(code)])
    assert edited != first
    module.write_text(module.read_text() + "\n")
    assert key("127.0.0.1:6379", environ, [str(code)]) not in (first, edited)


def test_folder_is_closed_to_other_users() -> None:
    made = Path(tempfile.mkdtemp(prefix="lr", dir="/tmp")) / "r"  # short: Unix sockets
    assert folder({DIR_ENV: str(made)}) == str(made)
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    made.chmod(0o755)
    with pytest.raises(Unavailable, match=DIR_ENV):
        folder({DIR_ENV: str(made)})
    shutil.rmtree(made.parent)
    with pytest.raises(Unavailable, match="too long a path for a Unix socket"):
        folder({DIR_ENV: str(made.parent / ("x" * 60))})


def test_an_address_where_nothing_listens_fails_at_once(resident_dir: str,
                                                        tmp_path: Path) -> None:
    """Ray would retry for minutes: the client says what is wrong first."""
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump(corpus(tmp_path, ("json",))))
    address = f"127.0.0.1:{free_port()}"  # bound and closed again: nothing listens
    started = time.perf_counter()
    result = subprocess.run(command(manifest, tmp_path / "run", address), cwd=REPO,
                            env=env_for(resident_dir),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert f"--ray-address {address}: nothing accepts connections there" in result.stderr
    assert time.perf_counter() - started < 30
    assert not (tmp_path / "run").exists()


# --- served builds, on a real cluster --------------------------------------------------

@pytest.fixture(scope="module")
def cluster():
    started = LocalCluster().start(nodes=1)
    yield started
    started.stop()


@pytest.fixture
def resident_dir():
    path = tempfile.mkdtemp(prefix="lr", dir="/tmp")  # short: Unix socket paths
    yield path
    for process in drivers(path):  # what a failed test left
        process.kill()
    shutil.rmtree(path, ignore_errors=True)


def drivers(resident: str) -> list[psutil.Process]:
    """This test's resident drivers: the processes started with its folder's key."""
    found = []
    for process in psutil.process_iter(["cmdline", "environ"]):
        try:
            cmdline = " ".join(process.info["cmdline"] or [])
            env = process.info["environ"] or {}
        except psutil.Error:
            continue
        if "resident.server" in cmdline and env.get(DIR_ENV) == resident:
            found.append(process)
    return found


def corpus(tmp_path: Path, packages: tuple[str, ...]) -> dict:
    tree = tmp_path / "tree"
    for package in packages:
        shutil.copytree(STDLIB / package, tree / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return {"name": "resident", "seed": 3, "shard": {"max_docs": 8},
            "sources": [{"name": "tree", "kind": "code",
                         "reader": {"type": "tree", "root": str(tree)}}],
            "stages": [{"syntax": {}}, {"exact_dedup": {"partitions": 2}},
                       {"minhash": {"partitions": 2}}]}


@pytest.fixture(scope="module")
def reference(ray_session, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The manifest the tests build (seven standard-library packages: long enough to be
    interrupted on one CPU), and the digest of its build in the test's own process."""
    folder = tmp_path_factory.mktemp("resident")
    raw = corpus(folder, ("email", "json", "http", "logging", "xml", "urllib", "asyncio"))
    manifest = folder / "m.yaml"
    manifest.write_text(yaml.safe_dump(raw))
    run_build(raw, folder, folder / "local")
    return manifest, digest(folder / "local")


def command(manifest: Path, run_dir: Path, address: str, *extra: str) -> list[str]:
    return [*CLI, "build", "--manifest", str(manifest), "--run-dir", str(run_dir),
            "--ray-address", address, "--progress", "none", *extra]


def env_for(resident: str, **more: str) -> dict[str, str]:
    return {**cluster_env(), DIR_ENV: resident, **more}


def served(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], int]:
    process = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    out, err = process.communicate(timeout=600)
    return subprocess.CompletedProcess(cmd, process.returncode, out, err), process.pid


def driver_pid(run_dir: Path) -> int:
    return json.loads((run_dir / "timings.json").read_text())["driver_pid"]


@pytest.mark.slow
def test_served_builds_match_a_build_in_its_own_process(cluster: LocalCluster,
                                                        reference: tuple[Path, dict],
                                                        resident_dir: str,
                                                        tmp_path: Path) -> None:
    manifest, expected = reference
    env = env_for(resident_dir)

    pids = []
    for name in ("first", "second"):
        result, client = served(command(manifest, tmp_path / name, cluster.address), env)
        assert result.returncode == 0, result.stderr
        assert "note: resident driver" not in result.stderr, result.stderr
        assert "kept" in result.stdout  # the summary, printed by the client
        assert digest(tmp_path / name) == expected
        assert driver_pid(tmp_path / name) != client
        pids.append(driver_pid(tmp_path / name))
    assert pids[0] == pids[1], "the second build was not served by the first one's driver"
    assert [p.pid for p in drivers(resident_dir)] == [pids[0]]

    result, client = served(command(manifest, tmp_path / "own", cluster.address,
                                    "--no-resident"), env)
    assert result.returncode == 0, result.stderr
    assert driver_pid(tmp_path / "own") == client
    assert digest(tmp_path / "own") == expected

    # another environment: another driver, and the first one is told to exit
    result, _ = served(command(manifest, tmp_path / "other-env", cluster.address),
                       env_for(resident_dir, LEMUR_DATA_TEST_SETTING="1"))
    assert result.returncode == 0, result.stderr
    assert driver_pid(tmp_path / "other-env") not in pids
    assert digest(tmp_path / "other-env") == expected
    assert gone(pids[0]), "the older driver still runs"


def gone(pid: int, timeout: float = 60) -> bool:
    """The process has exited (or is a zombie) within the timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def start_and_wait_for_markers(cmd: list[str], env: dict[str, str], run_dir: Path,
                               count: int = 2) -> subprocess.Popen[str]:
    process = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    markers = run_dir / "markers" / "01-ingest+syntax"
    deadline = time.time() + 300
    while time.time() < deadline and len(list(markers.glob("*.json"))) < count:
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    assert not (run_dir / "stats.json").exists(), "the build ended before it was stopped"
    return process


@pytest.mark.slow
def test_ctrl_c_or_a_killed_client_stops_the_build_and_the_same_command_resumes(
        cluster: LocalCluster, reference: tuple[Path, dict], resident_dir: str,
        tmp_path: Path) -> None:
    manifest, expected = reference
    env = env_for(resident_dir)

    def interrupt(process: subprocess.Popen[str]) -> None:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 130, err
        assert "rerun the same command to resume" in " ".join(err.split())
        assert "Traceback" not in err

    def kill(process: subprocess.Popen[str]) -> None:
        process.kill()
        process.communicate(timeout=60)

    for name, stop in (("interrupted", interrupt), ("killed", kill)):
        run_dir = tmp_path / name
        cmd = command(manifest, run_dir, cluster.address)
        process = start_and_wait_for_markers(cmd, env, run_dir)
        [driver] = drivers(resident_dir)
        stop(process)
        assert gone(driver.pid), f"{name}: the driver does not serve again, it exits"
        resumed, _ = served(cmd, env)
        assert resumed.returncode == 0, resumed.stderr
        assert digest(run_dir) == expected


@pytest.mark.slow
def test_a_build_while_another_is_served_runs_in_its_own_process(
        cluster: LocalCluster, reference: tuple[Path, dict], resident_dir: str,
        tmp_path: Path) -> None:
    manifest, expected = reference
    env = env_for(resident_dir)
    first = start_and_wait_for_markers(command(manifest, tmp_path / "a", cluster.address), env,
                                       tmp_path / "a", count=1)
    second, client = served(command(manifest, tmp_path / "b", cluster.address), env)
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert second.returncode == 0, second.stderr
    assert "another build is running in the resident driver" in second.stderr
    assert driver_pid(tmp_path / "b") == client
    assert driver_pid(tmp_path / "a") != first.pid
    assert digest(tmp_path / "a") == digest(tmp_path / "b") == expected


@pytest.mark.slow
def test_a_driver_exits_once_its_cluster_is_stopped(cluster: LocalCluster,
                                                    reference: tuple[Path, dict],
                                                    resident_dir: str, tmp_path: Path) -> None:
    """The module's last test: it stops the cluster (the fixture's stop then finds
    nothing left to stop)."""
    manifest, _ = reference
    result, _ = served(command(manifest, tmp_path / "run", cluster.address),
                       env_for(resident_dir))
    assert result.returncode == 0, result.stderr
    [driver] = drivers(resident_dir)
    [socket_file] = Path(resident_dir).glob("*.sock")
    cluster.stop()
    assert gone(driver.pid, timeout=30), "the driver outlived its cluster"
    assert not socket_file.exists()
