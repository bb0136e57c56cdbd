"""`lemur-data explain --run-dir D ID|PATH`: every stage's decision on one document, in
run order, down to where it ended (the output, or the stage that removed it).

The runner's part is generic: which stages the document reached, kept or removed with
the reason and detail. What each decision was made of (scores against thresholds, the
cluster and its surviving copy, the repository document, the Megatron shard) each stage
says through its `explain` hook (stages/explain.py), from the run folder alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...stages.explain import WorkFiles
from .hooks import explain_lines
from .rundir import KEPT, REPLACED, RunFolder, StepFolder, stage_of


class UnknownDocumentError(Exception):
    """No source of the run listed this id or path."""


@dataclass
class Decision:
    stage: str
    step: str
    verdict: str
    """kept, removed (reason: detail), or not reached."""
    lines: list[str] = field(default_factory=list)


@dataclass
class Explanation:
    fate: dict[str, Any]
    decisions: list[Decision]

    def text(self) -> str:
        fate = self.fate
        where = {"removed": f"removed by {fate['reason']}", KEPT: "kept in the output",
                 REPLACED: "replaced by a document a stage made of it"}[fate["outcome"]]
        out = [f"{fate['id']}  {fate.get('path') or '-'}  ({fate['source']}, "
               f"{fate.get('kind')}, {fate.get('lang') or 'no language'}): {where}"]
        for d in self.decisions:
            out.append(f"  {d.stage:<14} {d.verdict}")
            out += [f"  {'':<14}   {line}" for line in d.lines]
        return "\n".join(out)

    def json(self) -> dict[str, Any]:
        return {"id": self.fate["id"], "path": self.fate.get("path"),
                "source": self.fate["source"], "outcome": self.fate["outcome"],
                "reason": self.fate.get("reason"), "detail": self.fate.get("detail"),
                "decisions": [{"stage": d.stage, "step": d.step, "verdict": d.verdict,
                               "lines": d.lines} for d in self.decisions]}


def _work_of(run: RunFolder, stage: str) -> WorkFiles:
    """The work folder of a global stage (`work/NN-<stage>`), if the run has one."""
    from ...stages import storage

    final = (run.stats.get("read") or {}).get("final_round")
    base = run.path(f"rounds/{final}", "work") if final is not None else run.path("work")
    fs, bare = storage.filesystem(base)
    if not fs.exists(bare):
        return WorkFiles(None)
    for name in sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(bare, detail=False)):
        if name.split("-", 1)[-1] == stage:
            return WorkFiles(storage.join(base, name))
    return WorkFiles(None)


def explain(run: RunFolder, key: str) -> list[Explanation]:
    """The explanations of the documents this id or path names (a path may name one
    document in several sources)."""
    fates = run.find(key)
    if not fates:
        sources = ", ".join(s["name"] for s in run.manifest["manifest"]["sources"])
        # the run's input, as stats.json counts it (fates also hold what stages made)
        read = (run.stats.get("input") or {}).get("docs")
        read_note = f"{read:,} documents were read; " if isinstance(read, int) else ""
        raise UnknownDocumentError(
            f"{key!r} is no document of {run.run_dir}: no source of the run ({sources}) "
            f"lists it as an id or a path ({read_note}a sampled run read only its sample)")
    return [_one(run, fate) for fate in fates]


def _one(run: RunFolder, fate: dict[str, Any]) -> Explanation:
    removed_by = stage_of(fate.get("reason"))
    decisions: list[Decision] = []
    reached = True
    rows: dict[str, dict[str, Any]] = {}  # the document as each step left it

    def row_in(step: StepFolder, removed: bool) -> dict[str, Any]:
        folder = step.removed_dir if removed else step.kept_dir
        path = f"{folder}/{fate['shard']}.parquet"
        if path not in rows:
            rows[path] = run.rows_in(path, [fate["id"]]).get(fate["id"], {})
        return rows[path]

    given = {name: params for item in run.manifest["manifest"].get("stages") or []
             for name, params in item.items()}
    for entry in run.stats.get("stages") or []:
        stage = entry["name"]
        # the parameters as the manifest gave them: an explicit null differs from a default
        entry = {**entry, "given": given.get(stage) or {}}
        step = run.stage_step(stage)
        label = step.label if step else "-"
        if not reached:
            decisions.append(Decision(stage, label, "not reached"))
            continue
        work = _work_of(run, stage)
        if stage == removed_by and step is not None and step.label == fate["step"]:
            doc = row_in(step, removed=True)
            detail = f": {fate['detail']}" if fate.get("detail") else ""
            decisions.append(Decision(stage, label, f"removed ({fate['reason']}){detail}",
                                      explain_lines(stage, doc, entry, work)))
            reached = False
            continue
        # a document removed later in the same fused step: as the earlier stages left it
        here = step is not None and fate["outcome"] == "removed" and step.label == fate["step"]
        doc = row_in(step, removed=here) if step is not None else {}
        if step is not None and not doc and fate["outcome"] == REPLACED:
            # replaced in this step: the stage says by what
            doc = {**fate, "replaced": True}
            decisions.append(Decision(stage, label, "replaced",
                                      explain_lines(stage, doc, entry, work)))
            reached = False
            continue
        if step is not None and not doc:  # a document a later stage made (a repository's)
            decisions.append(Decision(stage, label, "-"))
            continue
        lines = explain_lines(stage, {**fate, **doc}, entry, work)
        decisions.append(Decision(stage, label, "kept" if step is not None else "", lines))
    if reached and fate["outcome"] == KEPT:
        # global stages after the last document step (mixing and packing): no stats
        # entry of their own, so their hook gets stats.json's top-level figures
        listed = {e["name"] for e in run.stats.get("stages") or []}
        doc = {**fate, **row_in(run.steps[-1], removed=False), "seed": run.seed}
        for stage in _work_stages(run):
            if stage not in listed:
                entry = {"name": stage, "params": {}, "run": run.stats}
                lines = explain_lines(stage, doc, entry, _work_of(run, stage))
                if lines:
                    decisions.append(Decision(stage, "-", "kept", lines))
    _cross_reference(run, decisions, fate["id"])
    return Explanation(fate, decisions)


_ID = re.compile(r"\b[0-9a-f]{32}\b")


def _cross_reference(run: RunFolder, decisions: list[Decision], own: str) -> None:
    """Where each document a decision names (the copy it collapsed into, the repository
    document it joined) ended: kept in the output, or removed by what, and then where
    the document named by that removal ended (a survivor merged into a repository
    document: that document)."""
    for decision in decisions:
        named = [i for line in [decision.verdict, *decision.lines] for i in _ID.findall(line)
                 if i != own]
        for doc_id in dict.fromkeys(named):
            seen = {own}
            while doc_id not in seen and len(seen) < 5:
                seen.add(doc_id)
                other = run.fate_of(doc_id)
                if other is None:
                    break
                where = {"removed": f"removed later by {other['reason']}",
                         KEPT: "in the output",
                         REPLACED: "replaced by a document made of it"}[other["outcome"]]
                detail = f" ({other['detail']})" if other.get("detail") else ""
                decision.lines.append(f"{doc_id} ({other.get('path') or '-'}): {where}"
                                      + (detail if other["outcome"] == "removed" else ""))
                follow = _ID.findall(other.get("detail") or "") \
                    if other["outcome"] == "removed" else []
                if not follow:
                    break
                doc_id = follow[0]


def _work_stages(run: RunFolder) -> list[str]:
    """Stage names of the work folders (`work/NN-<stage>`), in run order."""
    from ...stages import storage

    base = run.path("work")
    fs, bare = storage.filesystem(base)
    if not fs.exists(bare):
        return []
    names = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(bare, detail=False))
    return [n.split("-", 1)[1] for n in names if "-" in n]
