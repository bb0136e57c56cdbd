"""Runs phases of tasks on Ray, skipping tasks whose completion marker exists.

A task writes its outputs atomically and then its marker (holding the task's
summary), so a run killed at any point resumes by rerunning the same command:
finished tasks are read back from their markers, unfinished ones run again and,
being deterministic, write the same bytes.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import RayError, RayTaskError

from . import local_ray, worker_env

if TYPE_CHECKING:
    from ..stages.base import Phase, Resources, Task

# Only Ray is imported here: the build imports this module first, and `start` begins
# Ray's start at once, while the rest (storage: pyarrow, fsspec; the stages' base:
# pydantic; ~0.3 s) is imported by the build meanwhile, or by the functions below in a
# worker. Ray's start began that much later when this module imported them itself.

log = logging.getLogger("lemur_data")


class RunError(Exception):
    """A task failed; the message is the task's own error."""


def connect(address: str | None = None, workers: int | None = None) -> None:
    """Join a Ray cluster (address or RAY_ADDRESS), or start one on this machine; or wait
    for what `start` began."""
    global _starting
    if _starting is not None:
        starting, _starting = _starting, None
        starting.wait()
    elif not ray.is_initialized():
        _join(address, workers)


def start(address: str | None = None, workers: int | None = None) -> None:
    """Begin `connect` in a thread, so that what the build does meanwhile (imports, the
    manifest, listing, planning) overlaps it: a local Ray takes ~2 s to start, most of
    it the raylet waiting for its agents, and joining a running one ~0.5 s. Once joined,
    the thread asks for the build's first worker (`_warm_up`): a running Ray starts a
    new worker process for each build, ~0.3-0.6 s with its imports. `connect` then
    waits for both. Nothing when Ray runs already or a start is under way.

    The thread lives until `shutdown` has stopped Ray: the processes `ray.init` starts
    (GCS server, raylet) ask the kernel for a signal when their parent dies
    (PR_SET_PDEATHSIG), and on Linux the parent is the thread that started them, so
    they would be killed the moment that thread ended."""
    global _starting
    if ray.is_initialized() or _starting is not None:
        return
    _starting = _Start(address, workers)
    _started.append(_starting)


def _join(address: str | None, workers: int | None) -> None:
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        # A cluster's workers were started by `ray start`, not from this environment:
        # they set their Arrow pool themselves (worker_env), rather than through a
        # runtime_env, for which Ray would start new workers (0.4-0.8 s a build).
        ray.init(address=address, **_init_options())
    else:
        _start_local(workers)


def abandon() -> None:
    """Stop the Ray `start` began if no build went on to use it (an error came first):
    once started, since stopping Ray while it starts is not safe."""
    global _starting
    if _starting is None:
        return
    starting, _starting = _starting, None
    starting.done.wait()
    starting.warm = None  # stopped with Ray
    shutdown()


def shutdown(ending: bool = False) -> None:
    """Stop Ray (the local one this process started, or leave the cluster), and end the
    threads that started a local one. Nothing in a resident driver (`stay_connected`):
    its next build uses the same connection and workers. `ending`: this process ends
    next (the `lemur-data` command), so a local Ray it started is stopped without
    closing its own connection first (`local_ray.stop`)."""
    if _staying:
        return
    if ending and _own_ray:
        local_ray.stop()
        _end_starters()
    else:
        leave()


def leave() -> None:
    """`shutdown`, also in a resident driver (as it exits)."""
    ray.shutdown()
    _end_starters()


def _end_starters() -> None:
    """Ray has stopped: the threads that started a local one end (see `start`)."""
    global _own_ray
    _own_ray = False
    while _started:
        _started.pop().release.set()


class _Start:
    """The thread that joins or starts Ray, and what came of it."""

    def __init__(self, address: str | None, workers: int | None) -> None:
        self.error: BaseException | None = None
        self.warm: ray.ObjectRef | None = None  # the first worker's start (_warm_up)
        self.done = threading.Event()
        self.release = threading.Event()  # set once Ray has stopped (shutdown)
        # ray.init sets this handler (sys.exit, so that Ray's atexit hook stops it) only
        # from the main thread, and warns when called from another: set here instead.
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
        logging.getLogger("ray._private.worker").addFilter(_not_main_thread_warning)
        threading.Thread(target=self._run, args=(address, workers), name="ray-start",
                         daemon=True).start()

    def _run(self, address: str | None, workers: int | None) -> None:
        try:
            _join(address, workers)
            self.warm = _warm_up.remote()
        except BaseException as error:  # raised again by wait(), in the build's thread
            self.error = error
        finally:
            self.done.set()
        self.release.wait()  # until Ray has stopped: see start

    def wait(self) -> None:
        self.done.wait()
        if self.error is not None:
            raise self.error
        if self.warm is not None:
            # The first task then finds the worker ready, rather than starting a second
            # one beside it. An error is left for the tasks to report (ray.wait raises
            # none); a worker that takes long to come up is not waited for beyond this.
            ray.wait([self.warm], timeout=_WARM_UP_WAIT_S)
            self.warm = None


_starting: _Start | None = None  # begun by start, not yet waited for
_staying = False  # a resident driver: builds end without leaving the cluster
_own_ray = False  # the Ray this process is connected to is a local one it started
_started: list[_Start] = []  # their threads, until shutdown


_WARM_UP_WAIT_S = 30.0


@ray.remote(num_cpus=0, max_retries=0)
def _warm_up() -> None:
    """Nothing, in a worker of this build: Ray starts one (Python, Ray, this module, and
    what every task imports: storage, pyarrow, numpy), while the driver imports, reads
    the manifest and plans, and the first task's worker is then the one this left idle.
    It holds no CPU, so it never waits for one or keeps a task from one (a cluster node
    may have none)."""
    worker_env.set_in_worker()  # first: see _run_task
    from ..stages import storage
    from . import worker_memory as memory

    memory.prepare_worker()
    storage.skip_pandas_probe()
    # Every build's first step is fused document tasks (pipeline/fused.py: the readers,
    # the stage contract, pyarrow.compute, pydantic; ~0.15-0.2 s): imported here, while
    # the driver still plans, rather than as the first task's arguments are unpickled.
    from . import fused  # noqa: F401 - imported for the first task
    memory.hold_collector()  # until the first task starts: its imports collect nothing


def stay_connected() -> None:
    """This process is a resident driver (pipeline/resident): it serves build after build
    on one connection, so a build's end leaves Ray connected (`shutdown` does nothing)."""
    global _staying
    _staying = True


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(signum)


def _not_main_thread_warning(record: logging.LogRecord) -> bool:
    return "SIGTERM handler is not set" not in record.getMessage()


def _init_options(log_to_driver: bool = True) -> dict[str, Any]:
    return {"logging_level": logging.WARNING, "log_to_driver": log_to_driver}


def _start_local(workers: int | None) -> None:
    global _own_ray
    # no log monitor publishes the workers' output (local_ray): nothing to listen to
    local_ray.start(workers, **_init_options(log_to_driver=False))
    _own_ray = True


def is_done(task: Task, marker: str) -> bool:
    from ..stages import storage

    return storage.exists(marker) and all(storage.exists(path) for path in task.outputs)


@ray.remote(max_retries=3)
def _run_task(task: Task, marker: str) -> tuple[dict[str, Any], float, float, float]:
    """The task's summary, its worker's peak RSS (MB), and the CPU and wall seconds the
    task took."""
    # Ray ships a remote function by value, with the modules it names as globals: this
    # one, imported as the worker loads the function, runs lemur_data.pipeline's
    # __init__ (the Arrow pool: worker_env) before the task's arguments or the imports
    # below load pyarrow. A function that imports only inside its body left the pool
    # unset on a cluster's workers (mimalloc, whose freed pages Arrow keeps).
    worker_env.set_in_worker()
    from ..stages import storage
    from . import worker_memory as memory

    if is_done(task, marker):
        return storage.read_json(marker), memory.peak_rss_mb(), 0.0, 0.0
    memory.prepare_worker()
    storage.skip_pandas_probe()
    memory.reset_peak_rss()
    start_mb = memory.status_mb("VmRSS:")
    cpu_start = time.process_time()  # whole worker process: Arrow/numpy threads count too
    wall_start = time.perf_counter()
    try:
        summary = task.run()
        storage.write_json_atomic(marker, summary)
        peak = memory.peak_rss_mb()
        memory.log_task_memory(marker, start_mb, peak)
        return (summary, peak, time.process_time() - cpu_start,
                time.perf_counter() - wall_start)
    finally:
        memory.release_memory()


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
    worker process that ran one of these tasks, `cpu_seconds`: the CPU time the
    tasks run here took, summed, and `task_seconds`: their wall time inside the worker,
    summed (kept out of the summaries, which must
    not change between runs).
    """
    from ..stages import storage

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
                summaries[task.key], rss, cpu, wall = ray.get(ref)
                if usage is not None:
                    usage["peak_worker_rss_mb"] = round(
                        max(usage.get("peak_worker_rss_mb", 0.0), rss), 1)
                    usage["cpu_seconds"] = round(usage.get("cpu_seconds", 0.0) + cpu, 3)
                    usage["task_seconds"] = round(usage.get("task_seconds", 0.0) + wall, 3)
            except RayTaskError as error:
                for other in in_flight:
                    ray.cancel(other)
                cause = error.cause if getattr(error, "cause", None) else error
                raise RunError(f"{phase.name} task {task.key}: {cause}") from cause
            except RayError as error:  # its worker died (killed, out of memory), each retry
                raise RunError(f"{phase.name} task {task.key}: {_first_line(error)}; "
                               f"{_worker_logs()}") from error
            if on_done:
                on_done(summaries[task.key])
    return [summaries[task.key] for task in phase.tasks]


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _worker_logs() -> str:
    """Where the workers' output is: a local Ray forwards none of it (local_ray)."""
    from ray._private import worker as ray_worker

    node = getattr(ray_worker, "_global_node", None)  # no public API names it
    if node is None:
        return "the workers' output is in the Ray node's logs/ folder"
    return f"the workers' output is in {node.get_logs_dir_path()} (worker-*.err, *.out)"


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start
