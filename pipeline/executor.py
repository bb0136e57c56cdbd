"""Runs phases of tasks on Ray, skipping tasks whose completion marker exists.

A task writes its outputs atomically and then its marker (holding the task's
summary), so a run killed at any point resumes by rerunning the same command:
finished tasks are read back from their markers, unfinished ones run again and,
being deterministic, write the same bytes.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import resource
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import ray

from lemur_data.stages import storage
from lemur_data.stages.base import Phase, Resources, Task

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
        # Nothing reads a local instance's metrics (there is no dashboard), and its raylet
        # would wait 1.5-5 s at start for the metrics agent. RAY_* env set by the user wins.
        os.environ.setdefault("RAY_enable_metrics_collection", "0")
        # A local instance needs no network beyond loopback.
        ray.init(num_cpus=workers or os.cpu_count(), include_dashboard=False,
                 _node_ip_address="127.0.0.1", **options)


def is_done(task: Task, marker: str) -> bool:
    return storage.exists(marker) and all(storage.exists(path) for path in task.outputs)


def _peak_rss_mb() -> float:
    """This worker process's peak resident memory since `_reset_peak_rss` (in MB).

    VmHWM where there is /proc: Linux carries ru_maxrss over fork and exec, so a worker
    that raylet started would report at least the peak of the driver that started raylet.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak_rss() -> None:
    """Restart the VmHWM count (Linux >= 4.0), so the peak read after a task is that
    task's own, not the worker's lifetime peak over every task it ran before."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


def _status_mb(field: str) -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _log_task_memory(marker: str, start_mb: float, peak_mb: float) -> None:
    """Per-task memory to $LEMUR_TASK_MEMORY_LOG when set (tests/bench/bench_memory.py)."""
    path = os.environ.get("LEMUR_TASK_MEMORY_LOG")
    if path:
        with open(path, "a") as log_file:
            log_file.write(f"{marker}\t{os.getpid()}\t{start_mb:.1f}\t{peak_mb:.1f}\n")


def _load_malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, where the C library has one (not musl, not macOS)."""
    try:
        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    except (AttributeError, OSError):
        return None


_MALLOC_TRIM = _load_malloc_trim()


def _release_memory() -> None:
    """Give back to the OS what a finished task freed but the allocators kept (Python's
    cycles, pyarrow's pool, glibc's arenas), so a worker's next task starts from its
    baseline, not from the high-water mark of the tasks before it."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


@ray.remote(max_retries=3)
def _run_task(task: Task, marker: str) -> tuple[dict[str, Any], float, float]:
    """The task's summary, its worker's peak RSS (MB) and the CPU seconds the task took."""
    if is_done(task, marker):
        return storage.read_json(marker), _peak_rss_mb(), 0.0
    _reset_peak_rss()
    start_mb = _status_mb("VmRSS:")
    cpu_start = time.process_time()  # whole worker process: Arrow/numpy threads count too
    try:
        summary = task.run()
        storage.write_json_atomic(marker, summary)
        peak = _peak_rss_mb()
        _log_task_memory(marker, start_mb, peak)
        return summary, peak, time.process_time() - cpu_start
    finally:
        _release_memory()


def ray_options(resources: Resources | None) -> dict[str, Any]:
    if resources is None:
        return {}
    options: dict[str, Any] = {"num_cpus": resources.cpus}
    if resources.memory is not None:
        options["memory"] = int(resources.memory)
    return options


def check_feasible(phase: Phase) -> None:
    """Refuse, rather than wait forever, when no node can hold one task of the phase."""
    wanted = ray_options(phase.resources)
    if not wanted:
        return
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    if any(n.get("CPU", 0) >= wanted["num_cpus"] and n.get("memory", 0) >= wanted.get("memory", 0)
           for n in nodes):
        return
    largest = max(nodes, key=lambda n: n.get("CPU", 0), default={})
    raise RunError(f"{phase.name}: each task asks for {wanted['num_cpus']:g} CPUs and "
                   f"{wanted.get('memory', 0) / 2**30:.1f} GiB (stages[].resources), but the "
                   f"largest Ray node has {largest.get('CPU', 0):g} CPUs and "
                   f"{largest.get('memory', 0) / 2**30:.1f} GiB")


def run_phase(phase: Phase, markers_dir: str, workers: int | None,
              on_done: Callable[[dict[str, Any]], None] | None = None,
              usage: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """Run every task of `phase`; return their summaries in task order.

    `usage`, when given, receives `peak_worker_rss_mb`: the largest peak memory of a
    worker process that ran one of these tasks, and `cpu_seconds`: the CPU time the
    tasks run here took, summed (kept out of the summaries, which must
    not change between runs).
    """
    check_feasible(phase)
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
            ref = _run_task.options(name=f"{phase.name}:{task.key}",
                                    **ray_options(phase.resources)).remote(task, marker)
            in_flight[ref] = task
        done, _ = ray.wait(list(in_flight), num_returns=1)
        for ref in done:
            task = in_flight.pop(ref)
            try:
                summaries[task.key], rss, cpu = ray.get(ref)
                if usage is not None:
                    usage["peak_worker_rss_mb"] = round(
                        max(usage.get("peak_worker_rss_mb", 0.0), rss), 1)
                    usage["cpu_seconds"] = round(usage.get("cpu_seconds", 0.0) + cpu, 3)
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
