"""`lemur-data build`: plan, run every step on Ray, account, write stats.json."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from importlib import import_module
from typing import Any

from rich.console import Console

from ..stages import storage
from ..stages.base import Phase
from ..stages.dedup_index.format import IndexFiles
from ..stages.readers.common import InputUnit
from . import budget, heap, listing
from .dedup_index import write_step_record
from .executor import connect, run_phase, start
from .manifest import Manifest
from .planner import Continuations, RunLayout, RunPlan, Step, list_units, plan_run
from .progress import Mode, phase_progress
from .sample import unit_order
from .stats import run_stats


class RunDirError(Exception):
    """The run folder belongs to another manifest."""


@dataclass
class BuildResult:
    plan: RunPlan
    stats: dict[str, Any]
    seconds: float


def _refuse_whitespace(manifest: Manifest, run_dir: str) -> None:
    """Megatron-LM reads data_args.txt with split(): a shard path with a space in it
    cannot be named there, so a packing build in such a folder is refused before it runs."""
    folder = run_dir if "://" in run_dir else os.path.abspath(run_dir)
    if manifest.packs and any(c.isspace() for c in folder):
        raise RunDirError(f"run folder {folder!r} holds whitespace: Megatron-LM reads "
                          "megatron/data_args.txt with split(), so its shard paths cannot "
                          "contain spaces; use a run folder without them")


def earlier_indexes(manifest: Manifest) -> dict[str, str]:
    """Each `against` run's index, by the hash of its index.json (which holds that run's
    fingerprint and counts). The manifest names the runs, not what they hold: a run
    resumed after an earlier run was rebuilt must not mix decisions made against both.
    A run without an index is left to the stage, which refuses it with its own message."""
    found: dict[str, str] = {}
    for spec in manifest.stage_specs:
        for run in getattr(spec.params, "against", None) or []:
            path = IndexFiles(run).manifest()
            if run not in found and storage.exists(path):
                index = json.dumps(storage.read_json(path), sort_keys=True)
                found[run] = hashlib.sha256(index.encode()).hexdigest()[:16]
    return found


def _refuse_foreign(run_dir: str) -> None:
    """A folder that exists and holds anything but a run's record is not this build's to
    write in: refused before anything in it is written or deleted (`--run-dir ~` must
    never walk a home folder)."""
    fs, path = storage.filesystem(run_dir)
    if not fs.exists(path):
        return
    if not fs.isdir(path):
        raise RunDirError(f"--run-dir {run_dir} is a file, not a folder")
    # a run killed while it wrote its record leaves only that record's temporary
    others = sorted(name.rstrip("/").rsplit("/", 1)[-1] for name in fs.ls(path, detail=False)
                    if not (storage.is_temporary(name) and name.endswith("-manifest.json")))
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5
                                         else "")
        raise RunDirError(f"{run_dir} is not empty ({shown}) and holds no lemur-data run "
                          "(no manifest.json): nothing was written or deleted; use a new or "
                          "empty --run-dir")


def _read_record(record: str, run_dir: str) -> dict[str, Any]:
    try:
        recorded = storage.read_json(record)
    except (OSError, ValueError) as error:
        raise RunDirError(f"{record} is not a lemur-data run record ({error}): nothing was "
                          "written or deleted; use another --run-dir") from error
    if not isinstance(recorded, dict) or "fingerprint" not in recorded:
        raise RunDirError(f"{record} is not a lemur-data run record (no fingerprint): "
                          "nothing was written or deleted; use another --run-dir")
    return recorded


def remove_temporaries(run_dir: str) -> None:
    """The temporaries of writes a killed run never finished, in the run's own paths only
    (RunLayout.FOLDERS, and the files at the top of the folder)."""
    layout = RunLayout(run_dir)
    storage.remove_temporaries(run_dir, recursive=False)
    for folder in RunLayout.FOLDERS:
        storage.remove_temporaries(layout.path(folder))


def start_over(run_dir: str) -> None:
    """`--relist`: delete what the run made from its old listing, keeping its record."""
    layout = RunLayout(run_dir)
    for name in RunLayout.FOLDERS + RunLayout.FILES:
        if name == "manifest.json":
            continue
        fs, path = storage.filesystem(layout.path(name))
        if fs.exists(path):
            fs.rm(path, recursive=True)


def prepare_run_dir(manifest: Manifest, run_dir: str,
                    units: dict[str, list[InputUnit]] | None = None,
                    relist: bool = False) -> None:
    """Record the manifest and the input listing; refuse a folder that is not a run of
    this manifest, a listing that changed since the run began (unless `relist`: then the
    run starts over), or earlier runs whose index changed since.

    Temporary files of writes that a killed run never finished are removed, in the run's
    own folders only, once the folder is known to be this run's.
    """
    record = storage.join(run_dir, "manifest.json")
    fingerprint = manifest.fingerprint()
    indexes = earlier_indexes(manifest)
    if storage.exists(record):
        recorded = _read_record(record, run_dir)
        previous = recorded.get("fingerprint")
        if previous != fingerprint:
            raise RunDirError(
                f"{run_dir} holds a run of a different manifest (fingerprint {previous}, "
                f"this one {fingerprint}); use another --run-dir or delete it")
        for run, digest in recorded.get("against_indexes", {}).items():
            if indexes.get(run, digest) != digest:
                raise RunDirError(
                    f"{run_dir} was deduplicated against {run}, whose index has changed "
                    f"since (index.json {digest}, now {indexes[run]}): its decisions would "
                    "mix both; use another --run-dir or delete it")
        remove_temporaries(run_dir)
    else:
        _refuse_foreign(run_dir)
        remove_temporaries(run_dir)  # a killed write of the record itself
        # expansions stay local: published copies are rewritten with them
        # (pipeline/publish/public.py)
        storage.write_json_atomic(record, {"fingerprint": fingerprint,
                                           "manifest": manifest.model_dump(mode="json"),
                                           "expansions": manifest.expansions,
                                           "against_indexes": indexes})
    if units is None:
        return
    now = listing.describe(manifest, units)
    before = listing.recorded(run_dir)
    if before is not None and before != now:
        if not relist:
            raise RunDirError(
                f"{run_dir}: the input changed since this run began, and resuming would mix "
                "both listings: " + "; ".join(listing.changes(before, now)) + ". Rerun with "
                "--relist to start this run over on the new input, or use another --run-dir")
        start_over(run_dir)
        before = None
    if before is None:  # markers are written after this, so none is from another listing
        listing.record(run_dir, now)


class _Runner:
    """Runs steps and gathers what stats.json and timings.json need."""

    def __init__(self, workers: int | None, progress: Mode, console: Console) -> None:
        self.workers, self.console = workers, console
        self.progress: Mode = progress
        self.timings: dict[str, float] = {}
        self.memory: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.task_seconds: dict[str, float] = {}
        self.reset()

    def reset(self) -> None:
        """Forget the counts of a round that was not the last (timings add up)."""
        self.rows: list[dict[str, Any]] = []
        self.order: list[str] = []
        self.global_summaries: dict[str, Any] = {}
        self.shard_profiles: list[dict[str, Any]] = []

    def phases(self, step: Step, phases: list[Phase]) -> dict[str, list[dict[str, Any]]]:
        started = time.perf_counter()
        usage: dict[str, float] = {}
        results: dict[str, list[dict[str, Any]]] = {}
        for phase in phases:
            name = step.label if step.kind == "documents" else f"{step.label}.{phase.name}"
            markers = step.markers if step.kind == "documents" else \
                f"{step.markers}/{phase.name}"
            with phase_progress(name, len(phase.tasks), self.progress, self.console) as tracker:
                results[phase.name] = run_phase(phase, markers, self.workers, tracker, usage)
        # a step may run in parts (the mix, split from pack) and again in later rounds
        self.timings[step.label] = round(self.timings.get(step.label, 0.0)
                                         + time.perf_counter() - started, 3)
        self.memory[step.label] = max(self.memory.get(step.label, 0.0),
                                      usage.get("peak_worker_rss_mb", 0.0))
        self.cpu[step.label] = round(self.cpu.get(step.label, 0.0)
                                     + usage.get("cpu_seconds", 0.0), 3)
        self.task_seconds[step.label] = round(self.task_seconds.get(step.label, 0.0)
                                              + usage.get("task_seconds", 0.0), 3)
        return results

    def step(self, step: Step, phases: list[Phase] | None = None,
             summarize: bool = True) -> dict[str, list[dict[str, Any]]]:
        results = self.phases(step, step.phases if phases is None else phases)
        if step.kind == "documents":
            self.order += [n for n in step.stage_names if n not in self.order]
            self.rows += [row for summary in results[step.label] for row in summary["counts"]]
            self.shard_profiles = [s["profile"] for s in results[step.label]
                                   if "profile" in s]
            for summary in results[step.label]:  # stages' run_facts: into their stats entry
                for name, facts in summary.get("facts", {}).items():
                    self.global_summaries.setdefault(name, {}).update(facts)
        elif summarize:
            assert step.global_stage is not None and step.global_ctx is not None
            write_step_record(step.global_stage, step.global_ctx)
            self.global_summaries[step.stage_names[0]] = {
                "params": step.global_stage.params.model_dump(mode="json"),
                **step.global_stage.summary(step.global_ctx)}
        return results


def build(manifest: Manifest, run_dir: str, ray_address: str | None = None,
          workers: int | None = None, progress: Mode = "auto",
          console: Console | None = None,
          after_tasks: Callable[[], None] | None = None, relist: bool = False,
          ) -> BuildResult:
    """Run the manifest into `run_dir`. `after_tasks` is called once the last Ray task
    has finished, before stats, profile and report (the CLI stops Ray then, meanwhile).
    `relist`: a run folder whose input listing changed since it began starts over."""
    console = console or Console(stderr=True)
    started = time.perf_counter()
    if "://" not in run_dir:
        # The tasks get it whole: the workers of a Ray joined with --ray-address run in
        # the folder `ray start` ran in, where `runs/a` is another folder.
        run_dir = os.path.abspath(run_dir)
    _refuse_whitespace(manifest, run_dir)
    start(ray_address, workers)  # the input is listed and planned meanwhile
    budgeted = manifest.mixture is not None and manifest.mixture.read == "needed"
    units = list_units(manifest, full=True)
    more = Continuations(manifest, units)
    sampled = None
    written = manifest  # the run folder's record and fingerprint
    if manifest.sample is not None:
        from .sample import describe, for_sample, sample_units

        value = manifest.sample
        chosen = sample_units(units, value, manifest.seed)
        manifest = for_sample(manifest, units, chosen)
        sampled = describe(units, chosen, value, manifest)
        units = chosen
    plan = None if budgeted else plan_run(manifest, run_dir, units)
    prepare_run_dir(written, run_dir, units, relist)
    connect(ray_address, workers)
    # The report's imports (the Hub's card class, every stage's hooks: ~0.5-1 s) while
    # the tasks run and this process waits for them, rather than after the last one.
    threading.Thread(target=_import_report, name="import-report", daemon=True).start()
    heap.settle()  # imported: the collector runs again, over what the build makes
    runner = _Runner(workers, progress, console)
    read: dict[str, Any] | None = None
    if plan is not None:
        plan = _read_on(runner, more, plan, lambda us: plan_run(manifest, run_dir, us))
        for step in plan.steps[1:]:
            runner.step(step)
    else:
        plan, read = _budgeted(manifest, run_dir, units, runner, more)
    if after_tasks is not None:
        after_tasks()
    stats = run_stats(written, plan, run_dir, runner.rows, runner.order,
                      runner.global_summaries, runner.shard_profiles)
    if read is not None:
        stats["read"] = read
    if sampled is not None:
        stats["sample"] = sampled
    storage.write_json_atomic(plan.layout.path("stats.json"), stats)
    # Imported here, not at the top: the import overlaps the tasks (_import_report)
    # instead of delaying the start.
    from .publish.run_docs import write_run_docs

    heap.settle()  # the report's imports too: drawing allocates, and a full
    # collection would walk them all (0.2-0.4 s)
    write_run_docs(run_dir, stats)  # plots/, report.html, README.md (the dataset card)
    if any(getattr(spec.params, "index", False) for spec in manifest.stage_specs):
        from .dedup_index import build_index

        build_index(run_dir)  # <run>/index/: later runs deduplicate against this one
    if manifest.train is not None:  # launch/train.sh for the manifest's own node layout
        from .launch.run import write_launch

        write_launch(manifest, run_dir)
    seconds = time.perf_counter() - started
    storage.write_bytes_atomic(plan.layout.path("timings.json"),
                               json.dumps({"steps": runner.timings, "total": round(seconds, 3),
                                           "peak_worker_rss_mb": runner.memory,
                                           "cpu_seconds": runner.cpu,
                                           # wall time inside the tasks, summed: a build's
                                           # fixed cost is its wall time less this (1 worker)
                                           "task_seconds": runner.task_seconds,
                                           # the process that ran the build: the same
                                           # for builds a resident driver served
                                           "driver_pid": os.getpid()},
                                          indent=2).encode())
    return BuildResult(plan, stats, seconds)


def _read_on(runner: _Runner, more: Continuations, plan: RunPlan,
             replan: Callable[[dict[str, list[InputUnit]]], RunPlan]) -> RunPlan:
    """Runs the plan's first step, the one that reads the input units. While a unit found
    input past its plan, plans the units that read it (`Continuations`) and runs the
    first step of the plan with them: the finished tasks come back from their markers,
    and the counts are taken anew. Returns the plan the run goes on with."""
    first = plan.steps[0]
    results = runner.step(first)
    while more.found(plan.units, results[first.label]):
        plan = replan(more.extend(plan.units))
        first = plan.steps[0]
        runner.reset()
        results = runner.step(first)
    return plan


def _import_report() -> None:
    """Import what writes the report; an error is left for the import that needs it."""
    with contextlib.suppress(Exception):  # raised again where write_run_docs is imported
        import_module(".publish.run_docs", __package__).prepare()
        # what ray.shutdown imports (compiled DAGs, to shut them down: ~0.09 s), which
        # the CLI's shutdown thread then does beside the report, not after it
        import_module("ray.dag")


def _budgeted(manifest: Manifest, run_dir: str, units: dict[str, list[InputUnit]],
              runner: _Runner, more: Continuations) -> tuple[RunPlan, dict[str, Any]]:
    """`read: needed`: rounds over growing prefixes of the seeded unit orders, until the
    mix's split counts say every component has its target (pipeline/budget.py); then
    that round's mix packs. Returns the last round's plan and stats.json's `read`."""
    orders = {name: unit_order(us, manifest.seed) for name, us in units.items()}
    source_of = {u.shard_id: name for name, us in units.items() for u in us}
    counts: dict[str, int] | None = budget.pilot_counts(manifest, orders)
    pilot: budget.RoundResult | None = None
    number = 0
    tokenized: list[str] = []  # each round's tokenized shards, newest first
    while True:
        assert counts is not None
        runner.reset()
        # the prefix in listing order, as `read: all` plans its units
        # (and the units that read what a unit of it found past its plan, found so far)
        prefix = more.extend({n: sorted(o[:counts[n]], key=lambda u: u.index)
                              for n, o in orders.items()})
        # round 0, the pilot, measures the yield through the document stages only (its
        # first step is every round's); the output comes from a round with them all
        replan = partial(plan_run, manifest, run_dir, scope=f"rounds/{number}",
                         documents_only=pilot is None, earlier_tokens=tuple(tokenized))
        plan = _read_on(runner, more, replan(prefix), replan)
        source_of |= {u.shard_id: n for n, us in plan.units.items() for u in us}
        if plan.tokens_dir:
            tokenized.insert(0, plan.tokens_dir)
        *steps, mix = plan.steps
        for step in steps[1:]:
            runner.step(step)
        # only `split` before the round is known to be the last: it counts the kept
        # tokens per component; `plan` refuses a component with none, which a pilot
        # may well have
        split, *packing = mix.phases
        results = runner.step(mix, [split], summarize=False)
        result = budget.RoundResult(
            counts=dict(counts), input_bytes=budget.ingest_bytes(runner.rows),
            tokens=budget.tokens_by_source([t.key for t in split.tasks], results["split"],
                                           source_of),
            targets=budget.targets(manifest))
        counts = budget.next_counts(manifest, orders, result)
        number += 1
        if pilot is None:
            pilot = result
            counts = counts or dict(result.counts)
            continue
        if counts is None:
            runner.step(mix, packing)
            return plan, budget.read_stats(manifest, orders, pilot, result, number)
