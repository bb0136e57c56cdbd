"""Mix and pack: hit the target token ratio, write Megatron indexed datasets.

Phases (all deterministic; none depends on the number of workers):

- `split` (per shard): each document goes to its mixture component (the most
  specific weight key that matches: `source:lang`, `source`, `kind:lang`,
  `kind`) and gets a hash bucket from (seed, document id). Writes the
  component's tokens of the shard back to back plus a histogram of tokens per
  bucket (split.py; components and assignment in params.py, hashes
  and buckets in select.py).
- `plan` (one task): per component, target = total_tokens * weight / sum of
  weights; epochs = target / available. Every document is used floor(epochs)
  whole times; the fractional epoch takes the documents of the lowest hash
  buckets, and from the bucket where the target falls, documents in hash
  order, the last one shortened (its EOS kept), so each component gets its
  target to the token (plan.py).
- `pack`: `separate` writes each component as a few large shards
  (`<component>_00000.bin/.idx`, ...) epoch by epoch, shards in id order;
  `pre_blended` writes one dataset (`blend_00000...`) where each component's
  documents are shuffled (seeded) and spread evenly by token mass, so every
  window of the stream holds the target mix (pack.py).
- `data_args`: `data_args.txt` (weight prefix pairs for `--data-args-path`;
  each shard weighs its share of tokens, as the data are already mixed) and
  `summary.json` (data_args.py).
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from .. import storage
from ..base import (
    DocumentStage,
    GlobalContext,
    GlobalStage,
    Phase,
    ShardContext,
    StageResult,
    Task,
)
from ..hooks import Cost, CostInput
from .data_args import WriteDataArgs
from .pack import BlendAll, PackComponent
from .params import MixParams, components_of
from .plan import PlanMix
from .split import SplitShard


def _absolute(prefix: str) -> str:
    return prefix if "://" in prefix else os.path.abspath(prefix)


class _NoApplier(DocumentStage[MixParams]):
    name = "mix"
    Params = MixParams

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        return StageResult.keep_all(docs)


class MixAndPack(GlobalStage[MixParams]):
    """The last step of a run: reads the tokenized shards, writes `<run>/megatron/`."""

    name = "mix"
    about = (
        "mixes components at the target token shares and packs Megatron "
        ".bin/.idx shards")
    rate_mb_s = (50.0, 50.0)  # MB/s per core (code, text); docs/benchmarks.md

    @classmethod
    def cost(cls, params: MixParams | None, size: CostInput) -> Cost:
        """The Megatron shards: 2 bytes per token of the mixture."""
        base = super().cost(params, size)
        if not size.mixture_tokens:
            return base
        return Cost(base.core_hours, size.mixture_tokens * 2, base.memory_mb)

    @classmethod
    def run_figures(cls, summary: dict[str, Any]) -> dict[str, Any]:
        """Tokens available / used / epochs per component, realized vs target shares,
        and the Megatron shards."""
        return {"mixture": {k: v for k, v in summary["mixture"].items() if k != "dtype"},
                "megatron": summary["megatron"]}
    Params = MixParams

    @classmethod
    def explain(cls, doc: dict[str, Any], entry: dict[str, Any], work: Any) -> list[str]:
        """The Megatron shard and token range a kept document ended in (mix/locate.py)."""
        from .locate import locate

        if not work.folder or not doc.get("shard") or doc.get("seed") is None:
            return []
        bits = int(MixParams.model_fields["hash_bits"].default)
        return locate(doc["id"], doc["shard"].removeprefix("shard-"), doc["seed"],
                      work.folder, bits)

    def __init__(self, params: MixParams, out_dir: str) -> None:
        super().__init__(params)
        self.out_dir = out_dir

    def phases(self, ctx: GlobalContext) -> list[Phase]:
        p = self.params
        components = components_of(p)
        shards = sorted(ctx.input_shards)
        split_dirs = [storage.join(ctx.work_dir, "split", s) for s in shards]
        plan_path = storage.join(ctx.work_dir, "plan.json")
        outputs = storage.join(ctx.work_dir, "outputs")
        split = Phase("split", [
            Task(s, SplitShard(ctx.input_shards[s], d, components, ctx.seed, p.hash_bits))
            for s, d in zip(shards, split_dirs, strict=True)])
        planning = Phase("plan", [Task("plan", PlanMix(split_dirs, plan_path, components,
                                                       p.total_tokens, p.hash_bits))])
        writing = {"split_dirs": split_dirs, "plan_path": plan_path, "out_dir": self.out_dir,
                   "max_shard_bytes": int(p.max_shard_bytes), "seq_length": p.seq_length,
                   "bits": p.hash_bits}
        if p.blend == "separate":
            pack = Phase("pack", [
                Task(c.slug, PackComponent(**writing, outputs_path=storage.join(
                    outputs, c.slug + ".json"), component=c))
                for c in components])
            written = [storage.join(outputs, c.slug + ".json") for c in components]
        else:
            pack = Phase("pack", [Task("blend", BlendAll(
                **writing, outputs_path=storage.join(outputs, "blend.json"),
                components=components, seed=ctx.seed, batch_docs=p.blend_batch_docs))])
            written = [storage.join(outputs, "blend.json")]
        data_args = Phase("data_args", [Task("data_args", WriteDataArgs(
            written, self.out_dir, plan_path, _absolute(self.out_dir)))])
        return [split, planning, pack, data_args]

    def applier(self, ctx: GlobalContext) -> DocumentStage:
        return _NoApplier(self.params)

    def summary(self, ctx: GlobalContext) -> dict[str, Any]:
        plan = storage.read_json(storage.join(ctx.work_dir, "plan.json"))
        megatron = storage.read_json(storage.join(self.out_dir, "summary.json"))
        for entry in plan["components"]:
            entry["realized_epochs"] = (round(entry["used_tokens"] / entry["available_tokens"], 6)
                                        if entry["available_tokens"] else 0.0)
            entry["used_docs"] = megatron["docs"].get(entry["key"])
        return {"mixture": plan, "megatron": megatron}
