"""The resident driver: builds on a running Ray cluster, served by a process that stays.

Ray never shares a worker between two jobs, and every `lemur-data build` process is a
job of its own: each build on a running cluster paid for a new driver (~0.7-0.9 s of
imports, joining the cluster) and new workers (process start, imports, loading the
fastText model and grammars). Measured on a 1 MB build: 1.8-2.4 s of fixed cost, all
of it paid again by the next build.

So a build given `--ray-address` hands its command line to a resident driver: a
process that joined that cluster once, imported what a build needs, and keeps its job's
workers warm. The `lemur-data` process becomes a client (`client.py`): it sends its
arguments, working folder and terminal, prints what the build prints, and exits with the
build's exit code. The first build starts the resident driver (`server.py`), which then
serves the builds after it, one at a time, until it has been idle for 10 minutes, its
cluster is gone, or the code it runs has changed.

What makes this safe to do by default:

- A resident driver serves only the builds it would run identically: it is found by a
  key (`place.py`) made of the cluster address, the code (every file of the package,
  its size and mtime; the Python and its import path) and the environment. A build
  whose key differs starts a resident driver of its own, and the older ones of the
  same cluster are told to stop.
- It runs the same `cli.main` as a build in its own process: same stages, same bytes.
- A client killed or interrupted (Ctrl-C) interrupts the build, which stops as a build
  in its own process does (finished shards kept, rerun to resume); the resident driver
  then exits rather than go on in a state an interrupt left.
- Its socket lives in a folder only its user can open, and it checks the peer's uid.
- A second build while one runs, or any trouble reaching the resident driver, falls
  back to running in the `lemur-data` process, saying why on stderr.

`--no-resident` runs a build in its own process; so does a build under `ray job
submit` (no `--ray-address`: Ray sets `RAY_ADDRESS`), and every build that starts its
own local Ray. See docs/cluster.md ("Iterating on a running Ray").
"""
