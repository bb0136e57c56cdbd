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
Ray's shutdown for a second). The head's dashboard agent starts `--minimal` (no HTTP
server, no metrics or job modules; `_minimal_agent`): the raylet waits for the agent
to start before it registers, and the full agent's imports made that the longest part
of `ray.init`.

A cluster joined with `--ray-address` is left as its operator configured it
(README, "Security").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

# Ray reads it in every process it starts (inherited from the driver's environment).
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """Around `ray.init` of a local instance: loopback addresses, no API server."""
    from ray._private import node, ray_constants, utils

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

    node.Node.start_api_server = no_api_server
    saved_monitor = node.Node.start_monitor
    node.Node.start_monitor = no_monitor
    saved_check = utils.get_dashboard_dependency_error
    utils.get_dashboard_dependency_error = _minimal_agent
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_constant
        node.Node.start_api_server = saved_start
        node.Node.start_monitor = saved_monitor
        utils.get_dashboard_dependency_error = saved_check
        # The processes ray.init started have it; a `ray start` this process runs later
        # (a cluster head of its own) must not: Ray refuses multi-node clusters with it.
        if set_here:
            del os.environ[LOCAL_ONLY_ENV]


def _minimal_agent() -> ImportError:
    """Ray's check for its dashboard's dependencies, answered "missing": the raylet then
    starts its dashboard agent with `--minimal` (no HTTP server, no metrics or job
    modules), and the check's import of aiohttp, grpc and opentelemetry (~0.5 s) is
    spared. The raylet waits for the agent to start, and a full agent imports them all
    again."""
    return ImportError("a build's local Ray runs its dashboard agent minimal")

