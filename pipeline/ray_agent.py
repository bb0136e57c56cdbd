"""The two agents of a build's own local Ray, as stand-ins that start at once.

The raylet starts two Python agents, Ray's dashboard agent and its runtime-env agent,
and registers with the GCS (which `ray.init` waits for) only once both have written
their ports into the session folder. Each of Ray's own first imports Ray and its
servers (~0.5 s of CPU each), at the moment the driver imports too and the raylet
starts the first worker; on 2 cores the raylet waited ~0.9 s for them (load ~1), ~2 s
at load ~9.

A build's local Ray uses neither agent: it has no dashboard and no metrics
(local_ray.start), and no task asks for a runtime environment (the workers
inherit the driver's, pipeline/worker_env.py), so the raylet never calls the
runtime-env agent. Here each is a stand-in that imports nothing of Ray:

- `dashboard`: writes what Ray's own agent writes in its `--minimal` mode, where it
  serves nothing: -1 (no service) for its gRPC, metrics export and HTTP ports;
- `runtime_env`: binds the port it writes (on the node's address, loopback here) and
  does not listen, so a request the raylet would make is refused at once rather than
  left waiting.

Each then waits until the raylet closes its stdin, the pipe Ray's own agents watch
for the raylet's death (RAY_enable_pipe_based_agent_to_parent_health_check), or stops
it with SIGTERM at shutdown.

The raylet runs it as `python -I -S <this file> KIND PORTS <Ray's agent arguments>`
(AGENT_SCRIPT), PORTS being the port files' names as the running Ray spells them
(`port_names`; a Ray without those names keeps its own agents); pipeline/local_ray.py
rewrites the agent commands it is given. A port
file is what `ray._raylet.persist_port` writes: `<session>/<name>_<node id>` holding
the port in decimal, made whole at once (renamed into place). A cluster joined with
`--ray-address` keeps Ray's own agents.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import stat
import sys
import time

# Run by the raylet as `python -I -S <this file>`, not `-m lemur_data.pipeline.ray_agent`:
# isolated and without `site` (no .pth files, no editable-install finder, no package
# __init__) it starts ~20 ms sooner (`--help`, best of 15 on a loaded 2-core machine:
# 0.051-0.057 s against 0.066-0.071 s), and the raylet waits for both agents' ports
# before it registers (during a build: 0.07-0.11 s from their start to their ports,
# against 0.09-0.15 s). Isolated, the file's folder is not on the path either, so a
# module here named like a standard one cannot shadow it. It imports nothing but the
# standard library.
AGENT_SCRIPT = os.path.abspath(__file__)
KINDS = ("dashboard", "runtime_env")


def agent_scripts() -> dict[str, str]:
    """Ray's agent scripts, as the raylet would run them, by the KIND that stands in."""
    import ray

    root = os.path.dirname(ray.__file__)
    return {"dashboard": os.path.join(root, "dashboard", "agent.py"),
            "runtime_env": os.path.join(root, "_private", "runtime_env", "agent", "main.py")}


def persist_port(session_dir: str, node_id: str, name: str, port: int) -> None:
    """The port file the raylet waits for (as `ray._raylet.persist_port` writes it)."""
    path = os.path.join(session_dir, f"{name}_{node_id}")
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "w") as out:
        out.write(str(port))
    os.replace(partial, path)


def port_names() -> dict[str, list[str]] | None:
    """The port files each agent writes, by KIND, named by the running Ray's own
    constants (`ray._raylet`, where `persist_port` takes them); None when this Ray does
    not have them all, and the raylet then keeps Ray's own agents. The file format
    (`persist_port`) is the one of Ray 2.60, checked by tests/test_local_ray.py."""
    from ray import _raylet

    names = {"dashboard": ["METRICS_AGENT_PORT_NAME", "METRICS_EXPORT_PORT_NAME",
                           "DASHBOARD_AGENT_LISTEN_PORT_NAME"],
             "runtime_env": ["RUNTIME_ENV_AGENT_PORT_NAME"]}
    try:
        return {kind: [str(getattr(_raylet, name)) for name in constants]
                for kind, constants in names.items()}
    except AttributeError:
        return None


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="ray_agent.py")
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("ports", help="the port files to write, comma-separated (port_names)")
    parser.add_argument("--node-id", required=True)
    parser.add_argument("--session-dir", required=True)
    parser.add_argument("--node-ip-address", default="127.0.0.1")
    args, _ = parser.parse_known_args(argv)
    held = None
    if args.kind == "dashboard":
        for name in args.ports.split(","):
            persist_port(args.session_dir, args.node_id, name, -1)
    else:
        held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        held.bind((args.node_ip_address, 0))
        persist_port(args.session_dir, args.node_id, args.ports, held.getsockname()[1])
    try:
        _wait_for_raylet_exit()
    finally:
        if held is not None:
            held.close()


def _wait_for_raylet_exit() -> None:
    """Until the raylet's end of the stdin pipe closes, or (no pipe) its parent is gone."""
    if stat.S_ISFIFO(os.fstat(0).st_mode):
        with contextlib.suppress(OSError):
            while sys.stdin.buffer.read(4096):
                pass
        return
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1:])
