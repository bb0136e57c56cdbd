"""How the workers of a build's own local Ray start: Ray's default_worker.py, run in
this process once the two modules Ray imports and a build never uses are deferred
(pipeline/deferred_imports.py: ~0.15-0.2 s of each worker's start on 2 cores, the
first worker's on a small build's critical path).

The raylet runs `python <this file> <Ray's default_worker.py> <its arguments>`:
pipeline/local_ray.py rewrites the worker command `ray.init` gives the raylet
(`deferred_worker`). The worker is then the process the raylet started, with the
arguments, `sys.argv[0]` and `sys.path[0]` Ray's script has when run itself. A
cluster joined with `--ray-address` keeps its workers as `ray start` made them.
"""

import sys

if __name__ == "__main__":
    # First, with only `sys` imported: Python put this file's folder (pipeline/) first
    # on the path, where a module named like a standard one (profile.py) would shadow it.
    script = sys.argv[1]
    sys.path[0] = script.rpartition("/")[0]
    del sys.argv[0]

    import importlib
    import runpy

    # by its installed name: run as a file, this module has no package to be relative to
    importlib.import_module("lemur_data.pipeline.deferred_imports").defer()
    runpy.run_path(script, run_name="__main__")
