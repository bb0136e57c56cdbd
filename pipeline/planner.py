"""Turns a manifest into the ordered steps of a run, from the manifest alone.

Input units come from listing the sources (never from the number of workers),
so the shards, their ids and every output path are fixed before anything runs.
Consecutive document stages fuse into one step; a global stage ends the step
before it, runs its own phases, and its applier opens the next step.

With `mixture.read: needed` a run goes in rounds over growing prefixes of the
input units (pipeline/budget.py): the first step reads each unit on its own, so
its shards and markers are shared by every round; every later step depends on
global decisions over everything read, so it lives under `rounds/<r>/`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..stages import storage
from ..stages.base import (
    DocumentStage,
    GlobalContext,
    GlobalStage,
    Phase,
    Resources,
    ShardContext,
    Task,
)
from ..stages.ingest import plan_more, plan_units
from ..stages.mix.params import MixParams
from ..stages.mix.stage import MixAndPack
from ..stages.readers.common import InputUnit
from ..stages.registry import STAGES
from ..stages.tokenize.stage import Tokenize, TokenizeParams
from ..stages.tokenize.tokenizer import TokenizerConfig
from .fused import FusedShardTask, IngestInput
from .manifest import Manifest, MegatronOutputSpec


@dataclass(frozen=True)
class RunLayout:
    run_dir: str

    # Everything a run writes in its folder, and nothing else is ever written or deleted
    # there: cleanup (temporaries of a killed write, `--relist`) goes through these only.
    FOLDERS = ("stages", "removed", "markers", "work", "rounds", "megatron", "plots",
               "launch", "index")
    FILES = ("manifest.json", "stats.json", "timings.json", "README.md",
             "report.html")

    def path(self, *parts: str) -> str:
        return storage.join(self.run_dir, *parts)

    def markers(self, step: str) -> str:
        return self.path("markers", step)

    def scoped(self, scope: str, *parts: str) -> str:
        """`parts` below `scope` (a round's folder), or below the run folder."""
        return self.path(scope, *parts) if scope else self.path(*parts)


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
    markers: str = ""
    """Folder of the step's completion markers (a global step: one subfolder per phase)."""


@dataclass
class RunPlan:
    manifest: Manifest
    layout: RunLayout
    units: dict[str, list[InputUnit]]
    steps: list[Step] = field(default_factory=list)
    output_shards: dict[str, str] = field(default_factory=dict)
    tokens_dir: str = ""
    """The folder of the step that tokenizes (its shards hold the token ids), if any."""


def list_units(manifest: Manifest, full: bool = False) -> dict[str, list[InputUnit]]:
    """Each source's input units; with `sample:` only the sample's (unless `full`)."""
    shard = manifest.shard
    units = {s.name: plan_units(s.reader, s.info(), shard.max_docs, int(shard.max_bytes))
             for s in manifest.sources}
    if manifest.sample is None or full:
        return units
    from .sample import sample_units

    return sample_units(units, manifest.sample, manifest.seed)


class Continuations:
    """Units a run adds as it reads. A unit whose read found input past its plan (a
    remote compressed file sized from its first bytes that decompresses further:
    `Reader.read_more`, the `more` of its task's summary and marker) is followed by the
    units `Reader.plan_more` cuts that input into. They are numbered after every listed
    unit of the source, in the order of the units that found them, so the same input
    gives the same units and shard ids for any worker count, and again on resume (the
    finding is read back from the marker)."""

    def __init__(self, manifest: Manifest, listed: dict[str, list[InputUnit]]) -> None:
        self.manifest = manifest
        self.after: dict[str, list[InputUnit]] = {}
        """The units that read what a unit (by shard id) found past its plan."""
        self.next = {name: max((u.index for u in us), default=-1) + 1
                     for name, us in listed.items()}

    def found(self, units: dict[str, list[InputUnit]],
              summaries: list[dict[str, Any]]) -> bool:
        """Plans the units of each `more` in these summaries (of `units`' tasks) not
        planned yet; True if there was one."""
        from .sample import continuation

        order = {u.shard_id: (position, u.index, name, u)
                 for position, (name, us) in enumerate(units.items()) for u in us}
        found = sorted((order[s["shard"]], s["more"]) for s in summaries
                       if "more" in s and s["shard"] not in self.after)
        sources = {s.name: s for s in self.manifest.sources}
        shard = self.manifest.shard
        for (_, _, name, unit), more in found:
            spec = sources[name]
            cut = plan_more(spec.reader, spec.info(), unit, more, shard.max_docs,
                            int(shard.max_bytes))
            self.after[unit.shard_id] = [continuation(unit, self.next[name] + k, payload,
                                                      hint)
                                         for k, (payload, hint) in enumerate(cut)]
            self.next[name] += len(cut)
        return bool(found)

    def extend(self, units: dict[str, list[InputUnit]]) -> dict[str, list[InputUnit]]:
        """`units` and the units that follow any of them (and theirs), by index."""
        out: dict[str, list[InputUnit]] = {}
        for name, source_units in units.items():
            every = {u.shard_id: u for u in source_units}
            todo = list(source_units)
            while todo:
                for child in self.after.get(todo.pop().shard_id, []):
                    if child.shard_id not in every:
                        every[child.shard_id] = child
                        todo.append(child)
            out[name] = sorted(every.values(), key=lambda u: u.index)
        return out


def plan_run(manifest: Manifest, run_dir: str,
             units: dict[str, list[InputUnit]] | None = None, scope: str = "",
             documents_only: bool = False, earlier_tokens: tuple[str, ...] = ()) -> RunPlan:
    """The run's steps; `units` (from `list_units`) may be given to avoid listing twice.

    `scope` (a round's folder, `rounds/<r>`) holds every step after the first, which
    reads the input units themselves and so stays at the top of the run folder.
    `documents_only` (a `read: needed` pilot) leaves the global stages out but for the
    mix: the first step is the same, then only tokenize (the document stages after a
    global one are left out too: what they remove is the read margin's to cover, as
    dedup's is, and their work on the pilot would be redone).
    `earlier_tokens`: earlier rounds' `tokens_dir`s, newest first: the tokenizing step
    reuses their token ids for documents of the same id and text (ShardContext.earlier)."""
    layout = RunLayout(run_dir)
    units = list_units(manifest) if units is None else units
    plan = RunPlan(manifest, layout, units)
    readers = {s.name: (s.reader, s.info()) for s in manifest.sources}

    inputs: dict[str, IngestInput | str] = {
        unit.shard_id: IngestInput(readers[name][0], readers[name][1], unit)
        for name, source_units in units.items() for unit in source_units}
    pending: list[DocumentStage] = []
    # every stage of the run adds its part to the output's profile (its own columns)
    profilers = tuple(STAGES[spec.name] for spec in manifest.stage_specs)
    names = ["ingest"]
    number = 1

    def close_group(last: bool = False) -> None:
        nonlocal inputs, pending, names, number
        label = f"{number:02d}-{'+'.join(names)}"
        where = scope if plan.steps else ""
        out_dir = layout.scoped(where, "stages", label)
        removed_dir = layout.scoped(where, "removed", label)
        tasks = []
        outputs = {}
        for shard_id, source in inputs.items():
            out = storage.join(out_dir, f"shard-{shard_id}.parquet")
            earlier = tuple(storage.join(folder, f"shard-{shard_id}.parquet")
                            for folder in earlier_tokens) if last else ()
            ctx = ShardContext(shard_id, run_dir, manifest.seed, earlier=earlier)
            task = FusedShardTask(shard_id, source, list(pending), out,
                                  storage.join(removed_dir, f"shard-{shard_id}.parquet"), ctx,
                                  profile=last, profilers=profilers if last else ())
            tasks.append(Task(shard_id, task, (out, task.removed_path)))
            outputs[shard_id] = out
        phase = Phase(label, tasks, largest([s.params.resources for s in pending]))
        plan.steps.append(Step(label, "documents", names, [phase], out_dir, removed_dir,
                               markers=layout.scoped(where, "markers", label)))
        inputs, pending, names, number = dict(outputs), [], [], number + 1

    for spec in manifest.stage_specs:
        cls = STAGES[spec.name]
        if issubclass(cls, GlobalStage):
            if documents_only:
                if not plan.steps:
                    close_group()  # the shared first step ends where it always does
                continue
            close_group()
            label = f"{number:02d}-{spec.name}"
            stage = cls(spec.params)
            ctx = GlobalContext(run_dir, layout.scoped(scope, "work", label),
                                {k: v for k, v in inputs.items() if isinstance(v, str)},
                                manifest.seed)
            phases = [replace(p, resources=spec.params.resources) for p in stage.phases(ctx)]
            plan.steps.append(Step(label, "global", [spec.name], phases,
                                   global_stage=stage, global_ctx=ctx,
                                   markers=layout.scoped(scope, "markers", label)))
            number += 1
            pending.append(stage.applier(ctx))
            names.append(spec.name)
        elif documents_only and plan.steps:
            continue  # a pilot: only the first step's yield (and tokens) is measured
        else:
            pending.append(cls(spec.params))
            names.append(spec.name)
    tokenize = _tokenize_stage(manifest)
    if tokenize is not None:
        pending.append(tokenize)
        names.append(tokenize.name)
    if pending or not plan.steps:
        close_group(last=True)
        if tokenize is not None:
            plan.tokens_dir = plan.steps[-1].out_dir
    plan.output_shards = {k: v for k, v in inputs.items() if isinstance(v, str)}
    mix = _mix_stage(manifest, layout)
    if mix is not None:
        label = f"{number:02d}-{mix.name}"
        ctx = GlobalContext(run_dir, layout.scoped(scope, "work", label),
                            dict(plan.output_shards), manifest.seed)
        plan.steps.append(Step(label, "global", [mix.name], mix.phases(ctx),
                               global_stage=mix, global_ctx=ctx,
                               markers=layout.scoped(scope, "markers", label)))
    return plan


def largest(requests: list[Resources]) -> Resources:
    """One fused task runs every stage of its step: it needs the most any of them asks."""
    if not requests:
        return Resources()
    memories = [r.memory for r in requests if r.memory is not None]
    return Resources(cpus=max(r.cpus for r in requests),
                     memory=max(memories) if memories else None)


def _tokenize_stage(manifest: Manifest) -> Tokenize | None:
    """Tokenizing closes the last document step when the run tokenizes, mixes or packs."""
    if not manifest.tokenizes:
        return None
    config = TokenizerConfig.model_validate(
        (manifest.tokenizer or TokenizerConfig()).model_dump())
    return Tokenize(TokenizeParams(tokenizer=config))


def _mix_stage(manifest: Manifest, layout: RunLayout) -> MixAndPack | None:
    """Mixing and packing into `<run>/megatron/` ends a run that has a mixture or output."""
    if not manifest.packs:
        return None
    output = (manifest.output.megatron if manifest.output else None) or MegatronOutputSpec()
    mixture = manifest.mixture
    params = MixParams(weights=dict(mixture.weights) if mixture else None,
                       total_tokens=mixture.total_tokens if mixture else None,
                       max_shard_bytes=output.max_shard_bytes, blend=output.blend,
                       seq_length=output.seq_length)
    return MixAndPack(params, layout.path("megatron"))
