"""A real multi-node Ray cluster on this machine, started with `ray start`.

Each node gets its own temp folder and ports, one CPU, and loopback addresses.
Teardown kills only this cluster's processes (found by their temp folder), so a
local Ray used by other tests keeps running.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

import psutil

RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_port_range(size: int = 40) -> int:
    """First port of `size` free ports below the kernel's ephemeral range (32768+),
    where `free_port` picks, so the two never collide."""
    rng = random.Random(os.getpid())
    for _ in range(200):
        base = rng.randrange(20000, 32000 - size)
        try:
            for port in range(base, base + size):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no free port range for Ray workers")


def cluster_env() -> dict[str, str]:
    """This environment, as a shell that runs `ray start` would have it: without the
    worker settings a local build's Ray put here (pipeline/worker_env.py), which a
    cluster's workers must not need."""
    from lemur_data.pipeline.worker_env import WORKER_ENV

    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS" and k not in WORKER_ENV}
    env.update(RAY_ENV)
    return env


@dataclass
class LocalCluster:
    gcs_port: int = field(default_factory=free_port)
    dashboard_port: int = field(default_factory=free_port)
    temp_dirs: list[str] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def _start(self, head: bool, attempts: int = 3) -> str:
        """Start one node; a port taken between our pick and Ray's bind (other Ray
        instances of the suite pick ports too) fails `ray start`: clean up, try again."""
        for attempt in range(attempts):
            temp = tempfile.mkdtemp(prefix="lrc", dir="/tmp")  # short: unix socket paths
            try:
                self._start_in(temp, head)
            except RuntimeError as error:
                print(f"attempt {attempt + 1}: {error}")  # shown if the test fails
                self.kill_node(temp)  # what did start would otherwise outlive the suite
                shutil.rmtree(temp, ignore_errors=True)
                if attempt + 1 == attempts:
                    raise
                if head:
                    self.gcs_port, self.dashboard_port = free_port(), free_port()
                continue
            self.temp_dirs.append(temp)
            return temp
        raise AssertionError("unreachable")

    def _start_in(self, temp: str, head: bool) -> None:
        workers = free_port_range()
        args = ["ray", "start", "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
                "--disable-usage-stats", "--temp-dir", temp,
                "--node-manager-port", str(free_port()),
                "--object-manager-port", str(free_port()),
                "--dashboard-agent-listen-port", str(free_port()),
                "--metrics-export-port", str(free_port()),
                "--min-worker-port", str(workers), "--max-worker-port", str(workers + 40)]
        if head:
            args += ["--head", "--port", str(self.gcs_port), "--include-dashboard", "true",
                     "--dashboard-host", "127.0.0.1", "--dashboard-port", str(self.dashboard_port),
                     "--ray-client-server-port", str(free_port())]
        else:
            args += ["--address", self.address]
        result = subprocess.run(args, env=cluster_env(), capture_output=True, text=True,
                                timeout=180)
        if result.returncode != 0:
            raise RuntimeError(f"ray start failed: {result.stdout[-2000:]}{result.stderr[-2000:]}")

    def start(self, nodes: int = 2) -> LocalCluster:
        self._start(head=True)
        for _ in range(nodes - 1):
            self._start(head=False)
        self.wait_for_nodes(nodes)
        return self

    def add_node(self) -> str:
        return self._start(head=False)

    def wait_for_nodes(self, count: int, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            status = subprocess.run(["ray", "status", "--address", self.address],
                                    env=cluster_env(), capture_output=True, text=True,
                                    timeout=60)
            if status.stdout.count("node_") >= count:
                return
            time.sleep(1)
        raise RuntimeError(f"cluster did not reach {count} nodes: {status.stdout}")

    def processes(self, temp_dir: str) -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter(["cmdline"]):
            if any(temp_dir in part for part in process.info["cmdline"] or []):
                found.append(process)
        return found

    def kill_node(self, temp_dir: str, known: list[psutil.Process] | None = None) -> int:
        """SIGKILL every process of one node (raylet, its workers, agents).

        `known` (from `processes`, looked up beforehand) makes the kill immediate.
        """
        victims = list(known) if known is not None else self.processes(temp_dir)
        for process in list(victims):
            with contextlib.suppress(psutil.NoSuchProcess):
                victims += process.children(recursive=True)
        for process in victims:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(victims, timeout=10)
        return len(victims)

    def stop(self) -> None:
        for temp in reversed(self.temp_dirs):
            self.kill_node(temp)
            shutil.rmtree(temp, ignore_errors=True)
