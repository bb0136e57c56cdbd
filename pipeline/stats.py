"""stats.json: what every stage saw, kept and removed, and the checks that they add up.

Built only from the task summaries stored in the completion markers, so a
resumed run writes the same file as an uninterrupted one. Timings live in
timings.json because they differ from run to run.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..filters.langid import code as code_detector
from ..stages.base import DocumentStage
from ..stages.registry import STAGES, stage_hooks
from .manifest import Manifest
from .planner import RunPlan
from .profile import merge_profiles

Counts = dict[str, int]


class AccountingError(Exception):
    """Documents went missing or appeared between stages."""


def _zero() -> Counts:
    return {"docs": 0, "bytes": 0}


def _add(into: Counts, docs: int, size: int) -> None:
    into["docs"] += docs
    into["bytes"] += size


def stage_stats(rows: list[dict[str, Any]], order: list[str]) -> list[dict[str, Any]]:
    """Per stage: in, kept, removed, removed by reason, by source and by language."""
    if not rows:
        return []
    flagged = [row for row in rows if row.get("flags")]
    stages = []
    for name in order:
        entry: dict[str, Any] = {"name": name, "in": _zero(), "kept": _zero(),
                                 "removed": _zero(), "removed_by_reason": {},
                                 "by_source": {}, "by_lang": {}}
        by_reason: dict[str, dict[str, Any]] = defaultdict(
            lambda: {**_zero(), "by_source": defaultdict(_zero), "by_lang": defaultdict(_zero)})
        by_source: dict[str, dict[str, Counts]] = defaultdict(
            lambda: {"in": _zero(), "kept": _zero(), "removed": _zero()})
        by_lang: dict[str, dict[str, Counts]] = defaultdict(
            lambda: {"kept": _zero(), "removed": _zero()})
        totals: Counts = {}  # the stage's total_columns summed, shown by report and card
        by_detail: Counts = {}  # count_details: documents removed per detail
        for row in (row for row in rows if row["stage"] == name):
            for detail, docs in (row.get("details") or {}).items():
                by_detail[detail] = by_detail.get(detail, 0) + docs
            for column, value in (row.get("totals") or {}).items():
                totals[column] = totals.get(column, 0) + value
            outcome = "kept" if row["reason"] is None else "removed"
            docs, size = row["docs"], row["bytes"]
            _add(entry["in"], docs, size)
            _add(entry[outcome], docs, size)
            _add(by_source[row["source"]]["in"], docs, size)
            _add(by_source[row["source"]][outcome], docs, size)
            _add(by_lang[row["lang"] or "unknown"][outcome], docs, size)
            if row["reason"] is not None:
                reason = by_reason[row["reason"]]
                _add(reason, docs, size)
                _add(reason["by_source"][row["source"]], docs, size)
                _add(reason["by_lang"][row["lang"] or "unknown"], docs, size)
        entry["removed_by_reason"] = {
            name: {**counts, "by_source": dict(sorted(counts["by_source"].items())),
                   "by_lang": dict(sorted(counts["by_lang"].items()))}
            for name, counts in sorted(by_reason.items())}
        entry["by_source"] = dict(sorted(by_source.items()))
        entry["by_lang"] = dict(sorted(by_lang.items()))
        by_flag = _by_flag([row for row in flagged if row["stage"] == name])
        if by_flag:
            entry["by_flag"] = by_flag
        if totals:
            entry["totals"] = dict(sorted(totals.items()))
        if by_detail:
            entry["removed_by_detail"] = dict(sorted(by_detail.items()))
        stages.append(entry)
    return stages


def _by_flag(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """{flag: {value: {lang: {kept, removed}}}} for the columns a stage counts by."""
    table: dict[str, Any] = {}
    for row in rows:
        outcome = "kept" if row["reason"] is None else "removed"
        for flag, value in row["flags"].items():
            per_lang = table.setdefault(flag, {}).setdefault(str(value), {})
            counts = per_lang.setdefault(row["lang"] or "unknown",
                                         {"kept": _zero(), "removed": _zero()})
            _add(counts[outcome], row["docs"], row["bytes"])
    return {f: {v: dict(sorted(langs.items())) for v, langs in sorted(values.items())}
            for f, values in sorted(table.items())}


def check_accounting(stages: list[dict[str, Any]]) -> None:
    """in = kept + removed at every stage, and each stage's in is the previous kept."""
    previous: dict[str, Any] | None = None
    for stage in stages:
        for key in ("docs", "bytes"):
            total = stage["kept"][key] + stage["removed"][key]
            if stage["in"][key] != total:
                raise AccountingError(f"stage {stage['name']}: in {stage['in'][key]} {key} != "
                                      f"kept + removed {total}")
        if previous is not None and previous["kept"]["docs"] != stage["in"]["docs"]:
            raise AccountingError(
                f"stage {stage['name']} saw {stage['in']['docs']} documents but "
                f"{previous['name']} kept {previous['kept']['docs']}")
        previous = stage


def run_stats(manifest: Manifest, plan: RunPlan, run_dir: str, rows: list[dict[str, Any]],
              order: list[str], global_summaries: dict[str, Any],
              shard_profiles: list[dict[str, Any]]) -> dict[str, Any]:
    """stats.json: per-stage counts (checked: in = kept + removed), the global stages'
    own figures, the output, mixture and Megatron summaries, and the output profile."""
    stages = stage_stats(rows, order)
    for stage in stages:
        stage.update(global_summaries.get(stage["name"], {}))
    params = {spec.name: spec.params.model_dump(mode="json") for spec in manifest.stage_specs}
    for spec in manifest.stage_specs:  # a document stage's own figures (global: summaries)
        stage_class = STAGES[spec.name]
        if issubclass(stage_class, DocumentStage):
            figures = stage_class(spec.params).summary()
            for stage in stages:
                if stage["name"] == spec.name and figures:
                    stage.update(figures)
    for stage in stages:
        stage.setdefault("params", params.get(stage["name"], {}))
        stage.update(stage_hooks(stage["name"]).stats_figures(stage))
    check_accounting(stages)
    last = stages[-1] if stages else None
    stats: dict[str, Any] = {
        "manifest": manifest.name,
        "fingerprint": manifest.fingerprint(),
        "shards": len(plan.output_shards),
        "input": stages[0]["in"] if stages else {"docs": 0, "bytes": 0},
        "output": {**(last["kept"] if last else {"docs": 0, "bytes": 0}),
                   "by_source": {k: v["kept"] for k, v in last["by_source"].items()}
                   if last else {},
                   "by_lang": {k: v["kept"] for k, v in last["by_lang"].items()}
                   if last else {},
                   "shards": sorted(p.rsplit("/", 1)[-1] for p in plan.output_shards.values()),
                   "dir": [s for s in plan.steps if s.kind == "documents"][-1].out_dir
                   .replace(run_dir.rstrip("/") + "/", "")},
        "stages": stages,
        **({"code_language_detector": code_detector.detector()}
           if manifest.detects_code_language else {}),
        "checks": {"in_equals_kept_plus_removed": True, "stage_chain": True},
    }
    for name, summary in global_summaries.items():  # e.g. the mixture and Megatron output
        stats.update(stage_hooks(name).run_figures(summary))
    # Tokens, licenses, lengths and syntax checks of the kept documents (the last step's
    # tasks described their shards).
    stats["profile"] = merge_profiles(shard_profiles)
    if "tokens" in stats["profile"]:
        stats["output"]["tokens"] = stats["profile"]["tokens"]
    return stats
