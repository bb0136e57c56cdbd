"""The Ray instance a build starts on this machine when it joins no cluster (`start`,
`stop`): it listens on loopback only and starts no API server.

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
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

from . import ray_reaper
from .worker_env import WORKER_ENV

# Ray reads it in every process it starts (inherited from the driver's environment).
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
# Where Ray 2.60 makes the token of a new local instance (its token authentication,
# on by default), when the user has none.
TOKEN_PATH = "~/.ray/auth_token"


def start(workers: int | None, **init_options: Any) -> None:
    """Start this machine's instance for a build (`ray.init` with `init_options`): its
    settings first, then the reaper, then Ray on loopback only."""
    import ray

    # Workers of a local instance inherit this environment; a task runtime_env would
    # make Ray start new workers instead of the ones it started with the instance.
    for key, value in WORKER_ENV.items():
        os.environ.setdefault(key, value)
    # Nothing reads a local instance's metrics (there is no dashboard), and its raylet
    # would wait 1.5-5 s at start for the metrics agent. RAY_* env set by the user wins.
    os.environ.setdefault("RAY_enable_metrics_collection", "0")
    # The raylet connects to its own object store as it starts, and when the store
    # isn't listening yet it retries after 1 s (the default): half of the starts took
    # 3.7 s instead of 2.6. Retry every 10 ms instead, with the same 10 s patience: at
    # 100 ms, 5 raylets of 8 still waited the whole 0.1 s (raylet.out: the store's first
    # dump to "ObjectManager server started" 0.098-0.102 s, else 0.002-0.007 s).
    os.environ.setdefault("RAY_raylet_client_connect_timeout_milliseconds", "10")
    os.environ.setdefault("RAY_raylet_client_num_connect_attempts", "1000")
    # The raylet answers its first driver only once the worker it prestarts for it has
    # registered (~1 s: that worker imports Ray), and the driver waits for the answer in
    # ray.init holding the GIL, so this process's main thread could not import, read the
    # manifest or plan meanwhile. Without the prestart, ray.init returns at once and the
    # build's warm-up task (executor) starts the same worker: A/B, 8 pairs, fixed cost
    # median 4.66 -> 4.46 s on a loaded 2-core machine.
    os.environ.setdefault("RAY_prestart_worker_first_driver", "0")
    # Ray 2.60 turns token authentication on for a new local instance where
    # RAY_AUTH_MODE is unset (the token in ~/.ray/auth_token, made once), and then warns
    # on every build's stderr that it did. Kept on, without the warning: the mode cannot
    # be asked for by name from here, as Ray read its config when it was imported.
    logging.getLogger("ray._private.authentication.authentication_token_setup").addFilter(
        _not_token_auth_notice)
    # Ray's agents would outlive a SIGKILLed driver by a minute (see ray_reaper): what
    # ray.init starts from here on is stopped when this process is gone, also when it
    # is killed while ray.init runs.
    ray_reaper.start()
    token = os.path.expanduser(TOKEN_PATH)
    made_here = not os.path.exists(token)
    # address="local": a new instance, also when a `ray start` on this machine left its
    # address in /tmp/ray/ray_current_cluster (ray.init would join that one instead,
    # refusing num_cpus: a build without --ray-address failed while one ran).
    with loopback_only():
        ray.init(address="local", num_cpus=workers or os.cpu_count(), include_dashboard=False,
                 _node_ip_address="127.0.0.1", **init_options)
    ray_reaper.started()
    if made_here and os.path.exists(token):
        # Ray wrote it with this process's umask (0644 as a rule): any user of the
        # machine could read it and run code as this one through the loopback ports.
        os.chmod(token, 0o600)


def stop() -> None:
    """The instance `start` started, stopped as `ray.shutdown` stops it (its spill
    folder removed, then the raylet, which stops its workers, the GCS and the rest, each
    sent SIGTERM and waited for), but without first shutting down this process's own
    connection: that waits out a gRPC poller's 250 ms deadline (hard-coded in Ray 2.60's
    client_call.h; measured 0.256-0.259 s however long after the last task), which a
    process that ends next has no use for. Only for a process that ends next, then.
    Ray's exit hook, which would shut the connection down then (after a 0.5 s sleep), is
    removed: the connection dies with the process. Its Ray stopped under it, a driver
    stays quiet and exits 0 (checked for 3 s)."""
    import atexit

    from ray._private import worker

    node = worker._global_node
    if node is not None:
        node.destroy_external_storage()
        node.kill_all_processes(check_alive=False, allow_graceful=True)
    atexit.unregister(worker.shutdown)


def _not_token_auth_notice(record: logging.LogRecord) -> bool:
    return "Token authentication is enabled" not in record.getMessage()


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
