"""Runs phases of tasks on Ray, skipping tasks whose completion marker exists.

A task writes its outputs atomically and then its marker (holding the task's
summary), so a run killed at any point resumes by rerunning the same command:
finished tasks are read back from their markers, unfinished ones run again and,
being deterministic, write the same bytes.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import ray

from lemur_data.stages import storage
from lemur_data.stages.base import Phase, Task

log = logging.getLogger("lemur_data")


class RunError(Exception):
    """A task failed; the message is the task's own error."""


def connect(address: str | None = None, workers: int | None = None) -> None:
    """Join a Ray cluster (address or RAY_ADDRESS), or start one on this machine."""
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS")
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": True}
    if address:
        ray.init(address=address, **options)
    else:
        ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False, **options)


def is_done(task: Task, marker: str) -> bool:
    return storage.exists(marker) and all(storage.exists(path) for path in task.outputs)


@ray.remote(max_retries=3)
def _run_task(task: Task, marker: str) -> dict[str, Any]:
    if is_done(task, marker):
        return storage.read_json(marker)
    summary = task.run()
    storage.write_json_atomic(marker, summary)
    return summary


def run_phase(phase: Phase, markers_dir: str, workers: int | None,
              on_done: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run every task of `phase`; return their summaries in task order."""
    summaries: dict[str, dict[str, Any]] = {}
    pending: list[Task] = []
    for task in phase.tasks:
        marker = storage.join(markers_dir, f"{task.key}.json")
        if is_done(task, marker):
            summaries[task.key] = storage.read_json(marker)
            if on_done:
                on_done(summaries[task.key])
        else:
            pending.append(task)
    limit = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    in_flight: dict[ray.ObjectRef, Task] = {}
    queue = list(reversed(pending))
    while queue or in_flight:
        while queue and len(in_flight) < limit:
            task = queue.pop()
            marker = storage.join(markers_dir, f"{task.key}.json")
            ref = _run_task.options(name=f"{phase.name}:{task.key}").remote(task, marker)
            in_flight[ref] = task
        done, _ = ray.wait(list(in_flight), num_returns=1)
        for ref in done:
            task = in_flight.pop(ref)
            try:
                summaries[task.key] = ray.get(ref)
            except ray.exceptions.RayTaskError as error:
                for other in in_flight:
                    ray.cancel(other)
                cause = error.cause if getattr(error, "cause", None) else error
                raise RunError(f"{phase.name} task {task.key}: {cause}") from cause
            if on_done:
                on_done(summaries[task.key])
    return [summaries[task.key] for task in phase.tasks]


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start
