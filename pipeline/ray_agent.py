"""The dashboard agent of a build's own local Ray, started without its modules.

The raylet starts a dashboard agent and registers with the GCS only once the agent has
written its ports, so `ray.init` waits for the agent to start. Ray's agent first
imports every module under `ray.dashboard.modules` (pkgutil.walk_packages), ~0.6 s of
CPU of its ~1.1 s, then runs the ones it found: the reporter (psutil statistics every
few seconds, for metrics nothing reads here), the job agent (the job API that
pipeline/local_ray.py keeps closed), the log and event agents (the dashboard's). A
build's local Ray has no dashboard and uses none of them, so this agent loads none:
the raylet starts sooner, and no reporter polls while the tasks run.

The raylet runs it as `python -m lemur_data.pipeline.ray_agent <Ray's agent arguments>`
(pipeline/local_ray.py rewrites the agent command it is given); everything else is
Ray's own `ray/dashboard/agent.py`, run as its main script.
"""

from __future__ import annotations

import os
import runpy
import sys

AGENT_MODULE = __spec__.name if __spec__ is not None else "lemur_data.pipeline.ray_agent"


def _no_modules(module_type: type) -> list[type]:
    """`ray.dashboard.utils.get_all_modules`, for an agent that serves no module."""
    return []


def agent_script() -> str:
    """Ray's dashboard agent script, as the raylet would run it."""
    import ray

    return os.path.join(os.path.dirname(ray.__file__), "dashboard", "agent.py")


def main() -> None:
    import ray.dashboard.utils as dashboard_utils

    dashboard_utils.get_all_modules = _no_modules  # agent.py looks it up at call time
    script = agent_script()
    sys.argv[0] = script
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
