"""The environment a build's Ray workers run with: set in the worker itself.

- pyarrow's default mimalloc keeps the pages that Arrow's I/O and compute threads
  freed (measured: +20-40 MB per MinHash verify task, never returned by
  release_unused); the system allocator returns them through malloc_trim. Arrow reads
  `ARROW_DEFAULT_MEMORY_POOL` once, when pyarrow is imported (its import already
  allocates), and `pa.set_memory_pool` does not reach the pool Arrow's C++ threads
  use (measured: a churn of 250 MB left 80-160 MB behind with it, 0 with the
  variable).
- glibc makes up to 8 arenas per core, one for each allocating thread, each with its
  own free pages; two are enough. glibc reads `MALLOC_ARENA_MAX` at process start;
  once a process has made more than 8 arenas (a Ray worker has 16 before its first
  task: ~20 threads) the limit is fixed, and mallopt cannot lower it.

A local Ray's workers inherit both from the driver (local_ray.start). A cluster's
workers were started by `ray start` in an environment of their own; asking Ray for the
variables (a task's `runtime_env`) made it start new workers through its runtime-env
agent, 0.4-0.8 s per build. So a worker sets the Arrow pool itself as it loads the
first task's function, which lives in this package (Ray imports a task's function
before it unpickles the task's arguments, which import pyarrow): `lemur_data.pipeline`'s
`__init__` calls `set_in_worker`. The arena limit is the cluster's (docs/cluster.md).
"""

from __future__ import annotations

import os
import sys

WORKER_ENV = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "2"}

_WORKER_MODE = 1  # ray.WORKER_MODE (ray._private.worker), not imported from here


def in_ray_worker() -> bool:
    """This process is a Ray worker (not a driver): Ray is loaded and says so."""
    worker = getattr(sys.modules.get("ray._private.worker"), "global_worker", None)
    return getattr(worker, "mode", None) == _WORKER_MODE


def set_in_worker() -> None:
    """In a Ray worker that has not imported pyarrow yet: the Arrow pool of WORKER_ENV,
    unless the worker's environment names one."""
    if "pyarrow" not in sys.modules and in_ray_worker():
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL",
                              WORKER_ENV["ARROW_DEFAULT_MEMORY_POOL"])
