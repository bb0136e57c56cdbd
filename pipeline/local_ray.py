"""The Ray instance a build starts on this machine when it joins no cluster: it listens
on loopback only and starts no API server.

Two things in Ray 2.60 defeat `ray.init(_node_ip_address="127.0.0.1",
include_dashboard=False)`, measured with psutil on the listening sockets of a build:

- `ray.init` passes the address through `services.resolve_ip_for_localhost`, which
  replaces a loopback address with the machine's routable one, unless
  `ray_constants.ENABLE_RAY_CLUSTER` is false (its "local-only" mode, the default on
  macOS and Windows; env `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`). So the GCS server,
  raylet and workers listened on every interface and the agents on the external
  address. Here the constant is false while `ray.init` runs, and the variable is set
  for the processes it starts.
- The head always starts `dashboard.py`: with `include_dashboard=False` as an "API
  server" that still serves the job API (ray-project/ray#26042), so with
  `RAY_AUTH_MODE=disabled` a POST to it ran a command as the build's user. A build
  needs none of it (it talks to the GCS), so `Node.start_api_server` is not called.

The autoscaler's monitor is not started (one node: nothing to scale; it also held
Ray's shutdown for a second). The raylet registers only once its two agents have
written their ports, and their imports made that the longest part of `ray.init`: both
run as pipeline/ray_agent.py's stand-ins, which import nothing of Ray (should a
command not be rewritten, the dashboard agent is still Ray's `--minimal` one:
`_minimal_agent`). And `ray.init` waits for the raylet in the GCS's node table with
20 ms polls instead of Ray's 1 s ones (`_wait_until_registered`).

Nor is Ray's log monitor started. It tails the workers' log files and publishes their
lines to the driver, and its Python imports all of Ray as it starts: 0.9 CPU s of a
small build's ~9 on a 2-core machine, at the moment the driver and the first worker
need both cores. A build's workers print nothing (the stages log nothing; a demo build's
workers wrote only Ray's own `:task_name:` marks), and a task's error comes back with its
traceback; what a crashed worker wrote stays in the session's `logs/` folder, which the
build's error names (executor.run_phase).

Its workers start through pipeline/ray_worker.py, which runs Ray's own worker script
with two imports Ray makes and a build never uses deferred (pipeline/deferred_imports.py):
the first worker's start is on a small build's critical path.

A cluster joined with `--ray-address` is left as its operator configured it, log
monitor and workers included (README, "Security").
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

# Ray reads it in every process it starts (inherited from the driver's environment).
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """Around `ray.init` of a local instance: loopback addresses, no API server."""
    from ray._private import node, ray_constants, services, utils

    set_here = LOCAL_ONLY_ENV not in os.environ
    os.environ.setdefault(LOCAL_ONLY_ENV, "0")
    saved_constant = ray_constants.ENABLE_RAY_CLUSTER
    saved_start = node.Node.start_api_server
    # as Ray parses it (ray._common.utils.env_bool): a user's "1" keeps Ray's default
    ray_constants.ENABLE_RAY_CLUSTER = os.environ[LOCAL_ONLY_ENV].lower() in ("1", "true")

    def no_api_server(self: object, **_: object) -> None:
        """The job and state API server: a build uses neither."""

    def no_monitor(self: object) -> None:
        """The autoscaler's monitor: one node, nothing to scale (`ray start
        --no-monitor`'s choice, which ray.init does not offer)."""

    def no_log_monitor(self: object) -> None:
        """The log monitor: see the module's docstring (`RayParams.include_log_monitor`,
        which ray.init does not offer either)."""

    node.Node.start_api_server = no_api_server
    saved_monitor = node.Node.start_monitor
    node.Node.start_monitor = no_monitor
    saved_log_monitor = node.Node.start_log_monitor
    node.Node.start_log_monitor = no_log_monitor
    saved_check = utils.get_dashboard_dependency_error
    utils.get_dashboard_dependency_error = _minimal_agent
    saved_process = services.start_ray_process

    def start_process(command: list[str], process_type: str, *args: Any,
                      **kwargs: Any) -> Any:
        if process_type == ray_constants.PROCESS_TYPE_RAYLET:
            command = deferred_worker(bare_agent(command))
        return saved_process(command, process_type, *args, **kwargs)

    services.start_ray_process = start_process
    saved_get_node = services.get_node

    def get_node(gcs_address: str, node_id: str) -> Any:
        _wait_until_registered(gcs_address, node_id)
        return saved_get_node(gcs_address, node_id)

    services.get_node = get_node
    try:
        yield
    finally:
        services.get_node = saved_get_node
        ray_constants.ENABLE_RAY_CLUSTER = saved_constant
        node.Node.start_api_server = saved_start
        node.Node.start_monitor = saved_monitor
        node.Node.start_log_monitor = saved_log_monitor
        utils.get_dashboard_dependency_error = saved_check
        services.start_ray_process = saved_process
        # The processes ray.init started have it; a `ray start` this process runs later
        # (a cluster head of its own) must not: Ray refuses multi-node clusters with it.
        if set_here:
            del os.environ[LOCAL_ONLY_ENV]


def _wait_until_registered(gcs_address: str, node_id: str, timeout_s: float = 30) -> None:
    """Until the raylet `ray.init` started is in the GCS's node table, polled every 20 ms.
    `ray.init` asks the GCS for the node as soon as it started the raylet, and when the
    raylet has not registered yet, Ray's own lookup sleeps a second before it asks again
    (measured: 1.00-1.03 s each time, the raylet registering ~0.3 s after it started).
    Past the timeout, Ray's lookup has the last word (and its error)."""
    from ray._private import services, state

    table = state.GlobalState()
    table._initialize_global_state(services._get_gcs_client_options(gcs_address))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(node.get("NodeID") == node_id for node in table.node_table()):
            return
        time.sleep(0.02)


def _minimal_agent() -> ImportError:
    """Ray's check for its dashboard's dependencies, answered "missing": the raylet then
    starts its dashboard agent with `--minimal` (no HTTP server, no metrics or job
    modules), and the check's import of aiohttp, grpc and opentelemetry (~0.5 s) is
    spared. The raylet waits for the agent to start, and a full agent imports them all
    again."""
    return ImportError("a build's local Ray runs its dashboard agent minimal")


AGENT_OPTIONS = {"--dashboard_agent_command=": "dashboard",
                 "--runtime_env_agent_command=": "runtime_env"}


def bare_agent(raylet_command: list[str]) -> list[str]:
    """The raylet's command, with its dashboard and runtime-env agents run as
    pipeline/ray_agent.py's stand-ins. A command in a form this does not know (the
    agent's path quoted, say), or a Ray that does not name the agents' port files as
    the stand-ins expect (`ray_agent.port_names`), is left as Ray wrote it: that agent
    is then Ray's own, slower to start but as correct."""
    import subprocess

    from .ray_agent import AGENT_SCRIPT, agent_scripts, port_names

    ports = port_names()
    if ports is None:
        return raylet_command
    scripts = agent_scripts()
    rewritten = []
    for argument in raylet_command:
        for option, kind in AGENT_OPTIONS.items():
            if (script := _named_once(argument, option, scripts[kind])) is not None:
                argument = argument.replace(
                    script, f" -I -S {subprocess.list2cmdline([AGENT_SCRIPT])} {kind} "
                            f"{','.join(ports[kind])} ")
        rewritten.append(argument)
    return rewritten


WORKER_OPTION = "--python_worker_command="


def deferred_worker(raylet_command: list[str]) -> list[str]:
    """The raylet's command, with its Python workers started by pipeline/ray_worker.py:
    `python [setup_worker.py] <it> <default_worker.py> <arguments>` (the raylet drops
    setup_worker.py when a task asks for no runtime environment, as a build's do). A
    worker command in a form this does not know (Ray's default_worker.py not named
    once between spaces, say) is left as Ray wrote it: the workers then import all of
    what Ray imports, slower to start but as correct."""
    import subprocess

    import ray

    script = os.path.join(os.path.dirname(os.path.abspath(ray.__file__)), "_private",
                          "workers", "default_worker.py")
    quoted = subprocess.list2cmdline([script])
    entry = subprocess.list2cmdline([os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "ray_worker.py")])
    rewritten = []
    for argument in raylet_command:
        if (named := _named_once(argument, WORKER_OPTION, quoted)) is not None:
            argument = argument.replace(named, f" {entry}{named}")
        rewritten.append(argument)
    return rewritten


def _named_once(argument: str, option: str, path: str) -> str | None:
    """` <path> `, when `argument` is the raylet's `option` (a command it runs) and names
    `path` once, between spaces; else None. Counted whole, not with its spaces: two
    adjacent copies share the space between them, and `str.count` would see one."""
    named = f" {path} "
    if argument.startswith(option) and argument.count(path) == 1 and named in argument:
        return named
    return None
