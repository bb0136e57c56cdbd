"""`lemur-data build`: plan, run every step on Ray, account, write stats.json."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from lemur_data.pipeline.executor import connect, run_phase
from lemur_data.pipeline.manifest import Manifest
from lemur_data.pipeline.planner import RunPlan, plan_run
from lemur_data.pipeline.progress import Mode, phase_progress
from lemur_data.pipeline.stats import run_stats
from lemur_data.stages import storage


class RunDirError(Exception):
    """The run folder belongs to another manifest."""


@dataclass
class BuildResult:
    plan: RunPlan
    stats: dict[str, Any]
    seconds: float


def prepare_run_dir(manifest: Manifest, run_dir: str) -> None:
    """Record the manifest; refuse a folder made by a different manifest.

    Temporary files of writes that a killed run never finished are removed.
    """
    record = storage.join(run_dir, "manifest.json")
    storage.remove_temporaries(run_dir)
    fingerprint = manifest.fingerprint()
    if storage.exists(record):
        previous = storage.read_json(record).get("fingerprint")
        if previous != fingerprint:
            raise RunDirError(
                f"{run_dir} holds a run of a different manifest (fingerprint {previous}, "
                f"this one {fingerprint}); use another --run-dir or delete it")
        return
    storage.write_json_atomic(record, {"fingerprint": fingerprint,
                                       "manifest": manifest.model_dump(mode="json")})


def build(manifest: Manifest, run_dir: str, ray_address: str | None = None,
          workers: int | None = None, progress: Mode = "auto",
          console: Console | None = None,
          after_tasks: Callable[[], None] | None = None) -> BuildResult:
    """Run the manifest into `run_dir`. `after_tasks` is called once the last Ray task
    has finished, before stats, profile and report (the CLI stops Ray then, meanwhile)."""
    console = console or Console(stderr=True)
    started = time.perf_counter()
    plan = plan_run(manifest, run_dir)
    prepare_run_dir(manifest, run_dir)
    connect(ray_address, workers)
    rows: list[dict[str, Any]] = []
    order: list[str] = []
    timings: dict[str, float] = {}
    memory: dict[str, float] = {}
    cpu: dict[str, float] = {}
    global_summaries: dict[str, Any] = {}
    shard_profiles: list[dict[str, Any]] = []
    for step in plan.steps:
        step_start = time.perf_counter()
        step_usage: dict[str, float] = {}
        phase_results: dict[str, list[dict[str, Any]]] = {}
        for phase in step.phases:
            name = step.label if step.kind == "documents" else f"{step.label}.{phase.name}"
            markers = plan.layout.markers(step.label if step.kind == "documents"
                                          else f"{step.label}/{phase.name}")
            with phase_progress(name, len(phase.tasks), progress, console) as tracker:
                phase_results[phase.name] = run_phase(phase, markers, workers, tracker,
                                                      step_usage)
        if step.kind == "documents":
            order += [n for n in step.stage_names if n not in order]
            for summary in phase_results[step.label]:
                rows += summary["counts"]
            shard_profiles = [s["profile"] for s in phase_results[step.label] if "profile" in s]
        else:
            assert step.global_stage is not None and step.global_ctx is not None
            global_summaries[step.stage_names[0]] = {
                "params": step.global_stage.params.model_dump(mode="json"),
                **step.global_stage.summary(step.global_ctx)}
        timings[step.label] = round(time.perf_counter() - step_start, 3)
        memory[step.label] = step_usage.get("peak_worker_rss_mb", 0.0)
        cpu[step.label] = step_usage.get("cpu_seconds", 0.0)
    if after_tasks is not None:
        after_tasks()
    stats = run_stats(manifest, plan, run_dir, rows, order, global_summaries, shard_profiles)
    storage.write_json_atomic(plan.layout.path("stats.json"), stats)
    # Imported here, not at the top: matplotlib takes ~0.7 s to import, which this way
    # overlaps Ray's shutdown instead of delaying the start.
    from lemur_data.pipeline.report import write_run_docs

    write_run_docs(run_dir, stats)  # plots/, report.html, README.md (the dataset card)
    if any(getattr(spec.params, "index", False) for spec in manifest.stage_specs):
        from lemur_data.pipeline.index import build_index

        build_index(run_dir)  # <run>/index/: later runs deduplicate against this one
    if manifest.train is not None:  # launch/train.sh for the manifest's own node layout
        from lemur_data.pipeline.launch.run import write_launch

        write_launch(manifest, run_dir)
    seconds = time.perf_counter() - started
    storage.write_bytes_atomic(plan.layout.path("timings.json"),
                               json.dumps({"steps": timings, "total": round(seconds, 3),
                                           "peak_worker_rss_mb": memory,
                                           "cpu_seconds": cpu},
                                          indent=2).encode())
    return BuildResult(plan, stats, seconds)
