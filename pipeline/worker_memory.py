"""A worker's memory: per-task peaks, and giving back what a finished task freed.

A worker runs many tasks, and a task's peak counts from what the worker holds when
the task starts; so after each task the worker returns freed memory to the OS, and
its allocators are set up (at process start) to be able to.
"""

from __future__ import annotations

import ctypes
import gc
import os
import resource

import pyarrow as pa


def peak_rss_mb() -> float:
    """This worker process's peak resident memory since `reset_peak_rss` (in MB).

    VmHWM where there is /proc: Linux carries ru_maxrss over fork and exec, so a worker
    that raylet started would report at least the peak of the driver that started raylet.
    """
    return (status_mb("VmHWM:")
            or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def reset_peak_rss() -> None:
    """Restart the VmHWM count (Linux >= 4.0), so the peak read after a task is that
    task's own, not the worker's lifetime peak over every task it ran before."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass


def status_mb(field: str) -> float:
    """A field of /proc/self/status (VmRSS:, VmHWM:) in MB; 0 where there is no /proc."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def log_task_memory(marker: str, start_mb: float, peak_mb: float) -> None:
    """Per-task memory to $LEMUR_TASK_MEMORY_LOG when set (tests/bench/bench_memory.py)."""
    path = os.environ.get("LEMUR_TASK_MEMORY_LOG")
    if path:
        with open(path, "a") as log_file:
            log_file.write(f"{marker}\t{os.getpid()}\t{start_mb:.1f}\t{peak_mb:.1f}\n")


def _load_libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


_LIBC = _load_libc()
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number
_worker_ready = False
_collector_held = False  # by hold_collector, until the next task starts
_collector_was_held = False


def hold_collector() -> None:
    """Once per worker process, as its warm-up ends (executor._warm_up): what it imported
    so far (Ray, pyarrow, numpy, storage) out of later collections (`gc.freeze`), and
    no collection until a task starts (`prepare_worker`). In between, Ray unpickles the
    first task's arguments, which imports the stage modules it runs (~0.3 s, ~100
    collections, each walking what they imported so far); the first task's full
    collection afterwards (`release_memory`) walked all of it again: 45-70 ms, while
    the driver waited for the task's result. The driver's own imports do the same
    (pipeline/heap.py)."""
    global _collector_held, _collector_was_held
    if _collector_was_held:
        return
    _collector_held = _collector_was_held = True
    gc.freeze()
    gc.disable()


def _collect_again() -> None:
    """A task starts: what `hold_collector` let in (the stage modules) frozen too, and
    the collector on again for the task's own objects."""
    global _collector_held
    if _collector_held:
        _collector_held = False
        gc.freeze()
        gc.enable()


def prepare_worker() -> None:
    """Once per worker process: big buffers from mmap, so freeing one returns it.

    glibc raises its mmap threshold (up to 32 MB) each time a mapped block is freed,
    after which large buffers come from the arenas and stay resident; a fixed
    threshold turns that off. A worker runs many tasks, and each task's peak counts
    from what the worker holds when it starts. And at each task's start, the collector
    `hold_collector` stopped runs again.
    """
    global _worker_ready
    _collect_again()
    if _worker_ready:
        return
    _worker_ready = True
    mallopt = getattr(_LIBC, "mallopt", None)
    if mallopt is not None and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        mallopt(_M_MMAP_THRESHOLD, 1 << 17)


def release_memory() -> None:
    """Return to the OS what a finished task freed but the allocators kept (Python's
    cycles, pyarrow's pool, glibc's arenas: malloc_trim where libc has it)."""
    gc.collect()
    # What survived a task is the worker's (modules, models, caches): frozen, later full
    # collections skip it, so each costs ~1 ms instead of ~100 ms (measured; tasks are
    # many and short). Frozen objects are still freed by reference counting.
    gc.freeze()
    pa.default_memory_pool().release_unused()
    trim = getattr(_LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)
