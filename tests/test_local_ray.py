"""The Ray a plain `lemur-data build` starts: loopback only, no API server, no log
monitor, nothing left behind by a kill while it starts (issue 32), and a worker that
dies each time its task runs named in the build's error with the folder of its output."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from lemur_data.pipeline.ray_agent import AGENT_SCRIPT
from tests.realdata import STDLIB
from tests.test_cli import CLI, REPO, _in_session, _title


def _start_build(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    tree = tmp_path / "tree"
    for package in ("email", "json", "http"):
        shutil.copytree(STDLIB / package, tree / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    manifest = {"name": "loopback", "shard": {"max_docs": 4},
                "sources": [{"name": "tree", "kind": "code",
                             "reader": {"type": "tree", "root": str(tree)}}],
                "stages": [{"exact_dedup": {"partitions": 2}}]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items()
           if k != "RAY_ADDRESS" and k != "LEMUR_DATA_RAY_OWNER"}
    driver = subprocess.Popen([*CLI, "build", "--manifest", str(tmp_path / "m.yaml"),
                               "--progress", "none", "--run-dir", str(run)], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    return driver, run


def _loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _is_agent(title: str, kind: str = "") -> bool:
    """A process running pipeline/ray_agent.py (not the raylet, whose command names it)."""
    words = title.split()
    return AGENT_SCRIPT in words[:5] and (not kind or kind in words[:6])


def _stop(driver: subprocess.Popen[bytes]) -> None:
    driver.kill()
    driver.wait()
    for leftover in _in_session(driver.pid):
        leftover.kill()


@pytest.mark.slow
def test_a_local_build_listens_on_loopback_only(tmp_path: Path) -> None:
    import psutil

    driver, run = _start_build(tmp_path)
    try:
        markers = run / "markers" / "01-ingest"
        deadline = time.time() + 180
        while time.time() < deadline and not list(markers.glob("*.json")):
            time.sleep(0.05)
        assert list(markers.glob("*.json")), "the build wrote no marker"
        processes = _in_session(driver.pid)
        titles = [_title(p) for p in processes]
        assert any("raylet" in t for t in titles) and any("ray::" in t for t in titles), titles
        assert not any("dashboard/dashboard.py" in t for t in titles), titles
        listening = []
        for process in processes:
            try:
                for conn in process.net_connections(kind="inet"):
                    if conn.status == psutil.CONN_LISTEN:
                        listening.append((_title(process)[:60], conn.laddr.ip, conn.laddr.port))
            except psutil.Error:
                pass  # exited meanwhile
        assert len(listening) >= 3, listening  # GCS, raylet, workers: all seen
        exposed = [entry for entry in listening if not _loopback(entry[1])]
        assert not exposed, exposed
        # the raylet's two agents are pipeline/ray_agent.py's stand-ins, which import
        # nothing of Ray
        agents = [t for t in titles if _is_agent(t)]
        assert sorted(t.split(AGENT_SCRIPT)[1].split()[0] for t in agents) == \
            ["dashboard", "runtime_env"], titles
        assert not any("ray::DashboardAgent" in t or "ray::RuntimeEnvAgent" in t
                       for t in titles), titles
        # nor Ray's log monitor: its Ray import took 0.9 CPU s of a small build's start
        assert not any("log_monitor.py" in t for t in titles), titles
        raylet = next(p for p in processes if "raylet" in _title(p))
        session = Path(next(a.split("=", 1)[1] for a in raylet.cmdline()
                            if a.startswith("--session_dir=")))
        ports = {f.name.rsplit("_", 1)[0]: f.read_text() for f in session.glob("*_port_*")}
        assert ports["dashboard_agent_listen_port"] == ports["metrics_agent_port"] == "-1"
        held = int(ports["runtime_env_agent_port"])
        # held, not served: a request the raylet made would be refused at once
        with pytest.raises(ConnectionRefusedError), socket.create_connection(
                ("127.0.0.1", held), timeout=5):
            pass
    finally:
        _stop(driver)


@pytest.mark.slow
def test_a_kill_while_ray_starts_leaves_nothing_behind(tmp_path: Path) -> None:
    """Killed as soon as Ray's agents exist, which is before `ray.init` returns: the
    reaper used to start only after it, so the agents lived on for a minute."""
    import psutil

    driver, run = _start_build(tmp_path)
    try:
        deadline = time.time() + 180
        ray_processes: list[psutil.Process] = []
        while time.time() < deadline:
            ray_processes = psutil.Process(driver.pid).children(recursive=True)
            if any(_is_agent(_title(p)) for p in ray_processes):
                break
            time.sleep(0.01)
        driver.kill()
        driver.wait()
        killed = time.monotonic()
        assert not (run / "markers").exists(), "killed too late: tasks had started"
        _, alive = psutil.wait_procs(ray_processes, timeout=15)
        left = [p for p in _in_session(driver.pid) if p not in alive] + alive
        assert not left, (f"{time.monotonic() - killed:.1f} s after the kill: "
                          f"{[_title(p) for p in left]}")
    finally:
        _stop(driver)


@pytest.mark.slow
def test_a_build_without_an_address_starts_its_own_ray_beside_a_ray_start(
        tmp_path: Path) -> None:
    """`ray start` writes its address to <Ray's temp dir>/ray_current_cluster, and a plain
    `ray.init()` joins that one: a build without --ray-address then failed ("num_cpus
    ... must not be provided") while someone's `ray start` ran on the machine. Here the
    file names an address nothing listens on: the build must not even look at it."""
    temp = Path(tempfile.mkdtemp(prefix="lr", dir="/tmp"))  # short: Ray's socket paths
    try:
        (temp / "ray").mkdir()
        (temp / "ray" / "ray_current_cluster").write_text("127.0.0.1:1")
        tree = tmp_path / "tree"
        shutil.copytree(STDLIB / "json", tree / "json",
                        ignore=shutil.ignore_patterns("__pycache__"))
        manifest = {"name": "beside", "shard": {"max_docs": 4},
                    "sources": [{"name": "tree", "kind": "code",
                                 "reader": {"type": "tree", "root": str(tree)}}]}
        (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
        env = {k: v for k, v in os.environ.items()
               if k not in ("RAY_ADDRESS", "LEMUR_DATA_RAY_OWNER", "TMPDIR")}
        result = subprocess.run(
            [*CLI, "build", "--manifest", str(tmp_path / "m.yaml"), "--progress", "none",
             "--run-dir", str(tmp_path / "run"), "--workers", "1"],
            cwd=REPO, env={**env, "RAY_TMPDIR": str(temp)}, capture_output=True, text=True,
            timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        files = len(list((STDLIB / "json").glob("*.py")))
        assert f"of {files} documents" in result.stdout, result.stdout
        assert list((temp / "ray").glob("session_*")), "the build's Ray used another dir"
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def test_a_ray_without_the_port_names_keeps_its_own_agents(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-ins write the port files the running Ray names (ray._raylet's
    constants); a Ray that names them otherwise keeps its own agents, slower but as
    correct, rather than a raylet waiting for files nobody writes."""
    from ray import _raylet

    from lemur_data.pipeline.local_ray import bare_agent
    from lemur_data.pipeline.ray_agent import agent_scripts

    scripts = agent_scripts()
    command = ["raylet", f"--dashboard_agent_command=python {scripts['dashboard']} --x=1",
               f"--runtime_env_agent_command=python {scripts['runtime_env']} --y=2"]
    rewritten = bare_agent(command)
    # isolated, without site: ray_agent.py imports only the standard library
    assert f" -I -S {AGENT_SCRIPT} runtime_env runtime_env_agent_port " in rewritten[2]
    assert "metrics_agent_port,metrics_export_port,dashboard_agent_listen_port" in rewritten[1]
    twice = ["raylet", f"--dashboard_agent_command=python {scripts['dashboard']} "
                       f"{scripts['dashboard']} --x=1"]
    assert bare_agent(twice) == twice  # not named once: Ray's own agent
    monkeypatch.delattr(_raylet, "RUNTIME_ENV_AGENT_PORT_NAME")
    assert bare_agent(command) == command


def test_a_worker_command_in_a_form_not_known_is_left_as_ray_wrote_it() -> None:
    """The raylet's workers start through pipeline/ray_worker.py, given Ray's own worker
    script; a command that does not name that script once is left alone."""
    import ray

    from lemur_data.pipeline.local_ray import WORKER_OPTION, deferred_worker

    script = os.path.join(os.path.dirname(ray.__file__), "_private", "workers",
                          "default_worker.py")
    command = ["raylet", f"{WORKER_OPTION}python setup_worker.py {script} --x=1 Z", "--y"]
    rewritten = deferred_worker(command)
    entry = os.path.join(REPO, "pipeline", "ray_worker.py")
    assert rewritten[1] == f"{WORKER_OPTION}python setup_worker.py {entry} {script} --x=1 Z"
    assert rewritten[::2] == command[::2]
    twice = ["raylet", f"{WORKER_OPTION}python {script} {script} --x=1"]
    assert deferred_worker(twice) == twice
    assert deferred_worker(["raylet", f"{WORKER_OPTION}python other.py"])[1].endswith(
        "python other.py")


_DEFERRED_PROBE = """
import json, os, sys
import ray
from lemur_data.pipeline import executor

@ray.remote(num_cpus=1)
def probe():
    from lemur_data.pipeline.deferred_imports import DeferredModule
    seen = {"argv0": os.path.basename(sys.argv[0]),
            "deferred": [m for m in ("requests", "jsonschema")
                         if isinstance(sys.modules.get(m), DeferredModule)],
            "urllib3": "urllib3" in sys.modules}
    import requests
    seen["status"] = requests.codes.ok  # a use loads it whole
    seen["urllib3_after_use"] = "urllib3" in sys.modules
    return seen

os.environ.pop("RAY_ADDRESS", None)
executor.start(workers=1)
executor.connect()
print(json.dumps(ray.get(probe.remote())))
executor.shutdown()
"""


def test_a_local_ray_worker_starts_without_what_ray_imports_and_a_build_never_uses(
        ) -> None:
    """The workers of a build's own Ray run Ray's worker script through
    pipeline/ray_worker.py: `requests` and `jsonschema` are stand-ins until used."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    out = subprocess.run([sys.executable, "-c", _DEFERRED_PROBE], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"argv0": "default_worker.py", "deferred": ["requests", "jsonschema"],
                    "urllib3": False, "status": 200, "urllib3_after_use": True}, seen


def test_the_module_that_starts_ray_imports_only_ray() -> None:
    """A build imports pipeline/executor.py and starts Ray at once (`start`): the
    storage and stage modules it would import too (pyarrow, fsspec, pydantic: ~0.3 s)
    come after, while Ray starts, so they do not delay Ray's start."""
    probe = ("import sys\n"
             "import lemur_data.pipeline.executor\n"
             "print(sorted(m for m in ('pyarrow', 'fsspec', 'pydantic', 'numpy',\n"
             "                         'lemur_data.stages.storage') if m in sys.modules))\n")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True, timeout=300).stdout
    assert out.strip() == "[]", out


_WARM_PROBE = """
import gc, os, sys
import ray
from lemur_data.pipeline import executor

@ray.remote(num_cpus=1)
def probe():
    return os.getpid(), "lemur_data.pipeline.fused" in sys.modules, gc.isenabled()

os.environ.pop("RAY_ADDRESS", None)
executor.start(workers=1)
executor.connect()
first = ray.get(probe.remote())
second = ray.get(probe.remote())
print(first[0] == second[0], first[1], first[2])
executor.shutdown()
"""


def test_the_first_worker_is_warm_when_the_first_task_comes() -> None:
    """A build's first worker, started while the driver plans (executor._warm_up), has
    imported what every build's first task runs (pipeline/fused.py), and holds its
    collector until a task starts (worker_memory.hold_collector): the first task comes
    to that worker (same pid) and unpickles its arguments without a collection."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    out = subprocess.run([sys.executable, "-c", _WARM_PROBE], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True", "False"], out.stdout + out.stderr[-2000:]


@pytest.mark.slow
def test_a_task_whose_worker_dies_fails_the_build_naming_its_logs(tmp_path: Path) -> None:
    """As the kernel's OOM killer would: every worker that runs the first task is
    SIGKILLed, Ray retries it (max_retries=3) and then gives up. The build exits 1 with
    one line that names the task and the folder holding the workers' output (a local
    Ray forwards none of it), not a traceback."""
    import psutil

    tree = tmp_path / "tree"
    for package in ("email", "json", "http", "xml"):
        shutil.copytree(STDLIB / package, tree / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    manifest = {"name": "killed", "shard": {"max_docs": 400},
                "sources": [{"name": "tree", "kind": "code",
                             "reader": {"type": "tree", "root": str(tree)}}],
                "stages": [{"quality": {"code": {"preset": "starcoder2"}}}, {"syntax": {}}]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    env = {k: v for k, v in os.environ.items()
           if k != "RAY_ADDRESS" and k != "LEMUR_DATA_RAY_OWNER"}
    driver = subprocess.Popen([*CLI, "build", "--manifest", str(tmp_path / "m.yaml"),
                               "--progress", "none", "--run-dir", str(tmp_path / "run"),
                               "--workers", "1"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        kills = 0
        deadline = time.time() + 300
        while driver.poll() is None and time.time() < deadline:
            for process in _in_session(driver.pid):
                if "ray::01-" in _title(process):  # the first step's task, running
                    try:
                        process.kill()
                        kills += 1
                    except psutil.Error:
                        pass
            time.sleep(0.02)
        out, err = driver.communicate(timeout=60)
        assert driver.returncode == 1, (driver.returncode, err[-3000:])
        assert kills >= 2, kills  # the first try and at least one retry were killed
        line = next(x for x in err.splitlines() if x.startswith("error: run failed:"))
        assert "task tree-00000" in line and "Traceback" not in err, err[-3000:]
        logs = Path(line.split("the workers' output is in ")[1].split(" (")[0])
        assert logs.name == "logs" and list(logs.glob("worker-*.err")), line
    finally:
        _stop(driver)


def test_the_token_ray_makes_for_a_local_instance_is_the_users_alone(tmp_path: Path) -> None:
    """Ray 2.60 turns on token authentication for a new local instance and, where the
    user has no token, writes one to ~/.ray/auth_token with the process's umask (0644):
    a build leaves it readable by its user only. A token the user had is left alone."""
    probe = ("import os\n"
             "from lemur_data.pipeline import executor\n"
             "executor.start(workers=1)\n"
             "executor.connect()\n"
             "executor.shutdown()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    env["HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    token = tmp_path / ".ray" / "auth_token"
    assert token.stat().st_size > 0 and stat.S_IMODE(token.stat().st_mode) == 0o600
    token.chmod(0o640)  # the user's own choice, kept
    again = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert stat.S_IMODE(token.stat().st_mode) == 0o640
