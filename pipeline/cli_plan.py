"""`lemur-data plan`: a build's sources, shards, steps and outputs listed, and its cost
estimated per stage, without running it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .cli_commands import make_console
from .exit_codes import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from rich.console import Console

    from .manifest import Manifest


def plan_command(manifest: Manifest, run_dir: str, cores_per_node: int) -> int:
    from ..stages.ingest import plan_units
    from ..stages.readers.hf_dataset import LoadingScriptError
    from .estimate import estimate, nodes_for_a_day, read_fractions
    from .planner import plan_run

    out = make_console(soft_wrap=True)
    out.print(f"manifest {manifest.name} (fingerprint {manifest.fingerprint()}), "
              f"run dir {run_dir}", highlight=False)
    out.print("sources:")
    units: dict[str, list] = {}
    by_kind = {"code": 0, "text": 0}
    by_source: dict[str, int] = {}
    for source in manifest.sources:
        try:
            units[source.name] = plan_units(source.reader, source.info(),
                                            manifest.shard.max_docs, int(manifest.shard.max_bytes))
        except LoadingScriptError as error:  # a manifest to change, not an offline guess
            make_console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {error}",
                                                       highlight=False)
            return EXIT_USAGE
        except Exception as error:  # noqa: BLE001 - offline, no access: estimate from hints
            units[source.name] = []
            hint = int(source.size_hint or 0)
            by_kind[source.kind] += hint
            by_source[source.name] = hint
            reader = source.reader.type_name()
            out.print(f"  {source.name:<24} {source.kind:<5} {reader:<14} not listed "
                      f"({str(error).splitlines()[0][:80]}); size_hint {hint / 1e9:,.1f} GB",
                      highlight=False)
            continue
        docs = sum(u.docs_hint for u in units[source.name])
        size = sum(u.bytes_hint for u in units[source.name])
        by_kind[source.kind] += size
        by_source[source.name] = size
        out.print(f"  {source.name:<24} {source.kind:<5} {source.reader.type_name():<14} "
                  f"{len(units[source.name]):>6} shards  ~{docs:,} docs  ~{size / 1e6:,.1f} MB",
                  highlight=False)
    if manifest.sample is not None:
        units, manifest = plan_sample(manifest, units, by_kind, by_source, out)
    from ..stages.dedup_index.format import IndexedRunError
    from .estimate import earlier_reads

    try:
        plan = plan_run(manifest, run_dir, units)
        earlier = earlier_reads(manifest)
    except IndexedRunError as error:
        make_console(stderr=True).print(f"error: {error}", highlight=False)
        return EXIT_USAGE
    out.print("steps:")
    for step in plan.steps:
        tasks = sum(len(p.tasks) for p in step.phases)
        phases = ", ".join(p.name for p in step.phases) if step.kind == "global" else "fused"
        where = step.out_dir or (step.global_ctx.work_dir if step.global_ctx else "")
        out.print(f"  {step.label:<40} {step.kind:<9} {tasks:>6} tasks ({phases}) -> {where}",
                  highlight=False)
    out.print(f"outputs: {len(plan.output_shards)} shards, stats {run_dir}/stats.json",
              highlight=False)
    needed = manifest.mixture is not None and manifest.mixture.read == "needed"
    fractions = read_fractions(manifest, by_source)
    read_by_source = {s.name: int(by_source.get(s.name, 0) * fractions[s.name])
                      for s in manifest.sources}
    read_by_kind = {"code": 0, "text": 0}
    for source in manifest.sources:
        read_by_kind[source.kind] += read_by_source[source.name]
    if needed:
        out.print("read: needed, expected share of each source read (the build's pilot "
                  "measures the yield; this assumes estimate.KEPT_SHARE):")
        for source in manifest.sources:
            out.print(f"  {source.name:<24} {fractions[source.name]:>7.1%}  "
                      f"~{by_source.get(source.name, 0) * fractions[source.name] / 1e9:,.1f} GB",
                      highlight=False)
    if earlier:
        out.print("deduplicated against earlier runs (extra reads of their indexes):")
        for reads in earlier:
            out.print(f"  {reads.stage:<12} {reads.run}: {reads.docs:,} indexed docs, reads "
                      f"{reads.bytes_read / 1e6:,.2f} MB in full + at most "
                      f"{reads.bytes_candidates / 1e6:,.2f} MB for candidates only",
                      highlight=False)
    costs = estimate(manifest, read_by_source)
    charged = ("what read: needed is expected to read of" if needed else "all of") \
        + " the sources in its scope"
    out.print(f"estimate for {read_by_kind['code'] / 1e9:,.1f} GB of code and "
              f"{read_by_kind['text'] / 1e9:,.1f} GB of text (every stage charged for {charged}):")
    out.print(f"  {'stage':<16} {'input GB':>9} {'core-hours':>11} {'disk GB':>9} "
              f"{'memory/worker':>14}")
    for cost in costs:
        out.print(f"  {cost.stage:<16} {cost.input_bytes / 1e9:>9,.1f} {cost.core_hours:>11,.1f} "
                  f"{cost.disk_bytes / 1e9:>9,.1f} {cost.worker_memory_mb / 1e3:>11.1f} GB",
                  highlight=False)
    core_hours = sum(c.core_hours for c in costs)
    nodes = nodes_for_a_day(costs, cores_per_node)
    disk_tb = sum(c.disk_bytes for c in costs) / 1e12
    out.print(f"  total {core_hours:,.0f} core-hours, {disk_tb:,.2f} TB of disk: {nodes} node(s) "
              f"of {cores_per_node} cores finish it in a day", highlight=False)
    if needed:
        every = estimate(manifest, by_source)
        out.print(f"  with read: all ({by_kind['code'] / 1e9:,.1f} GB of code, "
                  f"{by_kind['text'] / 1e9:,.1f} GB of text): "
                  f"{sum(c.core_hours for c in every):,.0f} core-hours, "
                  f"{sum(c.disk_bytes for c in every) / 1e12:,.2f} TB of disk", highlight=False)
    return EXIT_OK


def plan_sample(manifest: Manifest, units: dict[str, list], by_kind: dict[str, int],
                 by_source: dict[str, int], out: Console) -> tuple[dict[str, list], Manifest]:
    """`plan` of a sampled run: what the sample reads of each source, and the manifest
    it plans with (its mixture scaled to the sample); the estimates that follow are for
    the sample (`by_kind`, `by_source` are updated in place)."""
    from .sample import SampledUnit, for_sample, sample_units, scaled

    assert manifest.sample is not None
    sampled = sample_units(units, manifest.sample, manifest.seed)
    out.print(f"sample {manifest.sample} (seed {manifest.seed}; a sample: not for training), "
              "reads:", highlight=False)
    by_kind.update(code=0, text=0)
    for source in manifest.sources:
        if not units.get(source.name):  # its size_hint, if any, stands for the source
            hinted = by_source.get(source.name, 0)
            if isinstance(manifest.sample, float):
                by_source[source.name] = int(hinted * manifest.sample)
                guess = f"estimated as {manifest.sample:.1%} of its size_hint"
            else:
                by_source[source.name] = 0
                guess = "not in the estimate"
            by_kind[source.kind] += by_source[source.name]
            out.print(f"  {source.name:<24} not listed, so not known yet ({guess})",
                      highlight=False)
            continue
        taken = [u for u in sampled.get(source.name, []) if isinstance(u, SampledUnit)]
        docs = sum(scaled(u)[0] for u in taken)
        size = sum(scaled(u)[1] for u in taken)
        rows = (f"{taken[0].share:.1%} of their rows" if taken and taken[0].quota < 0
                else "the rows of lowest seeded hash")
        out.print(f"  {source.name:<24} {len(taken):>4} of {len(units.get(source.name, [])):>4} "
                  f"units, {rows}: ~{docs:,} docs  ~{size / 1e6:,.1f} MB", highlight=False)
        by_source[source.name] = size
        by_kind[source.kind] += size
    planned = for_sample(manifest, units, sampled)
    if planned.mixture is not None and manifest.mixture is not None:
        out.print(f"  mixture: {planned.mixture.total_tokens:,.0f} tokens, the sample's share "
                  f"of total_tokens {manifest.mixture.total_tokens:,.0f}", highlight=False)
    return sampled, planned
