"""Turns a manifest into the ordered steps of a run, from the manifest alone.

Input units come from listing the sources (never from the number of workers),
so the shards, their ids and every output path are fixed before anything runs.
Consecutive document stages fuse into one step; a global stage ends the step
before it, runs its own phases, and its applier opens the next step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from lemur_data.pipeline.fused import FusedShardTask, IngestInput
from lemur_data.pipeline.manifest import Manifest
from lemur_data.stages import storage
from lemur_data.stages.base import (
    DocumentStage,
    GlobalContext,
    GlobalStage,
    Phase,
    ShardContext,
    Task,
)
from lemur_data.stages.ingest import plan_units
from lemur_data.stages.readers.common import InputUnit
from lemur_data.stages.registry import STAGES


@dataclass(frozen=True)
class RunLayout:
    run_dir: str

    def path(self, *parts: str) -> str:
        return storage.join(self.run_dir, *parts)

    def markers(self, step: str) -> str:
        return self.path("markers", step)


@dataclass
class Step:
    label: str
    kind: Literal["documents", "global"]
    stage_names: list[str]
    phases: list[Phase]
    out_dir: str = ""
    removed_dir: str = ""
    global_stage: GlobalStage | None = None
    global_ctx: GlobalContext | None = None


@dataclass
class RunPlan:
    manifest: Manifest
    layout: RunLayout
    units: dict[str, list[InputUnit]]
    steps: list[Step] = field(default_factory=list)
    output_shards: dict[str, str] = field(default_factory=dict)


def plan_run(manifest: Manifest, run_dir: str) -> RunPlan:
    layout = RunLayout(run_dir)
    shard = manifest.shard
    units = {s.name: plan_units(s.reader, s.info(), shard.max_docs, int(shard.max_bytes))
             for s in manifest.sources}
    plan = RunPlan(manifest, layout, units)
    readers = {s.name: (s.reader, s.info()) for s in manifest.sources}

    inputs: dict[str, IngestInput | str] = {
        unit.shard_id: IngestInput(readers[name][0], readers[name][1], unit)
        for name, source_units in units.items() for unit in source_units}
    pending: list[DocumentStage] = []
    names = ["ingest"]
    number = 1

    def close_group() -> None:
        nonlocal inputs, pending, names, number
        label = f"{number:02d}-{'+'.join(names)}"
        out_dir, removed_dir = layout.path("stages", label), layout.path("removed", label)
        tasks = []
        outputs = {}
        for shard_id, source in inputs.items():
            out = storage.join(out_dir, f"shard-{shard_id}.parquet")
            ctx = ShardContext(shard_id, run_dir, manifest.seed)
            task = FusedShardTask(shard_id, source, list(pending), out,
                                  storage.join(removed_dir, f"shard-{shard_id}.parquet"), ctx)
            tasks.append(Task(shard_id, task, (out, task.removed_path)))
            outputs[shard_id] = out
        plan.steps.append(Step(label, "documents", names, [Phase(label, tasks)], out_dir,
                               removed_dir))
        inputs, pending, names, number = dict(outputs), [], [], number + 1

    for spec in manifest.stage_specs:
        cls = STAGES[spec.name]
        if issubclass(cls, GlobalStage):
            close_group()
            label = f"{number:02d}-{spec.name}"
            stage = cls(spec.params)
            ctx = GlobalContext(run_dir, layout.path("work", label),
                                {k: v for k, v in inputs.items() if isinstance(v, str)},
                                manifest.seed, 0)
            plan.steps.append(Step(label, "global", [spec.name], stage.phases(ctx),
                                   global_stage=stage, global_ctx=ctx))
            number += 1
            pending.append(stage.applier(ctx))
            names.append(spec.name)
        else:
            pending.append(cls(spec.params))  # type: ignore[arg-type]
            names.append(spec.name)
    if pending or not plan.steps:
        close_group()
    plan.output_shards = {k: v for k, v in inputs.items() if isinstance(v, str)}
    return plan
