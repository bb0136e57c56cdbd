"""Phase `plan`: one task summing the split histograms into `plan.json`.

Per component: target tokens, whole epochs, and where the fractional epoch's
cut falls (hash bucket, tokens within it); plus realized vs target shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import storage
from .params import Component


@dataclass(frozen=True)
class PlanMix:
    split_dirs: list[str]
    out_path: str
    components: list[Component]
    total_tokens: float | None
    bits: int

    def __call__(self) -> dict[str, Any]:
        count = len(self.components)
        tokens = np.zeros((count, 2**self.bits), np.int64)
        docs = np.zeros((count, 2**self.bits), np.int64)
        number = {c.key: i for i, c in enumerate(self.components)}
        unassigned = {"docs": 0, "tokens": 0}
        dtypes = set()
        for folder in self.split_dirs:
            hist = storage.read_parquet(storage.join(folder, "histogram.parquet"))
            rows = np.array([number[k] for k in hist.column("component").to_pylist()], np.int64)
            cols = hist.column("bucket").to_numpy().astype(np.int64)
            np.add.at(tokens, (rows, cols), hist.column("tokens").to_numpy())
            np.add.at(docs, (rows, cols), hist.column("docs").to_numpy())
            info = storage.read_json(storage.join(folder, "info.json"))
            unassigned["docs"] += info["unassigned_docs"]
            unassigned["tokens"] += info["unassigned_tokens"]
            dtypes.add(info["dtype"])
        if len(dtypes) > 1:
            raise ValueError(f"shards hold token ids of different types {sorted(dtypes)}")
        plan = plan_components(self.components, tokens, docs, self.total_tokens)
        result = {"total_tokens": self.total_tokens, "hash_buckets": 2**self.bits,
                  "dtype": dtypes.pop() if dtypes else "uint16",
                  "unassigned": unassigned, "components": plan, **realized(plan)}
        storage.write_json_atomic(self.out_path, result)
        return {k: v for k, v in result.items() if k != "components"}


# More repeats of one component than any training would want: past this a target is a
# typo (total_tokens 1e15 on a few MB), and packing it would not end in any useful time.
MAX_EPOCHS = 10_000

def plan_components(components: list[Component], tokens: np.ndarray, docs: np.ndarray,
                    total_tokens: float | None) -> list[dict[str, Any]]:
    """Whole epochs, then where the fractional epoch's cut falls, per component.

    The fractional epoch takes the documents of the hash buckets below
    `cut_bucket`, then `cut_tokens` more from the cut bucket (whole documents in
    hash order, the last one shortened), so every component gets its target
    to the token.
    """
    weight_sum = sum(c.weight for c in components if c.weight is not None)
    plan = []
    for number, component in enumerate(components):
        available = int(tokens[number].sum())
        if component.weight is None or total_tokens is None:
            target = available
        else:
            target = round(total_tokens * component.weight / weight_sum)
        if available == 0 and target > 0:
            raise ValueError(f"mixture component {component.key!r} has weight "
                             f"{component.weight} but no tokens: no document matches it")
        full, rest = divmod(target, available) if available else (0, 0)
        if full >= MAX_EPOCHS:  # the packer would write the same documents for ever
            raise ValueError(f"mixture component {component.key!r} has {available:,} tokens "
                             f"and a target of {target:,}: {full:,} epochs, more than "
                             f"{MAX_EPOCHS:,}; lower mixture.total_tokens or this weight")
        cumulative = np.concatenate([[0], np.cumsum(tokens[number])])
        cut = int(np.searchsorted(cumulative, rest, side="right")) - 1
        plan.append({
            "key": component.key, "slug": component.slug, "weight": component.weight,
            "available_tokens": available, "available_docs": int(docs[number].sum()),
            "target_tokens": target, "epochs": round(target / available, 6) if available else 0.0,
            "full_epochs": full, "passes": full + (1 if rest else 0),
            "cut_bucket": cut, "cut_tokens": int(rest - cumulative[cut]),
            "used_tokens": target,
        })
    return plan


def realized(plan: list[dict[str, Any]]) -> dict[str, Any]:
    """Realized vs target shares of the mix (by weight), and the worst relative error."""
    used = sum(p["used_tokens"] for p in plan)
    weights = sum(p["weight"] or p["available_tokens"] for p in plan)
    worst = 0.0
    for p in plan:
        p["target_share"] = round((p["weight"] or p["available_tokens"]) / weights, 8) \
            if weights else 0.0
        p["realized_share"] = round(p["used_tokens"] / used, 8) if used else 0.0
        if p["target_share"]:
            error = p["realized_share"] / p["target_share"] - 1
            p["share_error"] = round(error, 8)
            worst = max(worst, abs(error))
    return {"used_tokens": used, "max_share_error": round(worst, 8)}
