"""Where a kept document's tokens went in the Megatron shards: the `explain` hook of the
mix, read back from its work files alone.

`split` wrote, per input shard and component, each document's token count and seeded
hash in shard order; `plan` the passes (epochs) and the cut of the last one; `pack`
(`separate`) the tokens of every pass, input shards in id order, documents in shard
order, into `<slug>_NNNNN` shards whose token counts `outputs/<slug>.json` holds. The
same walk, done over the counts only, gives the document's token range in each pass
and so the shard and the range inside it.
"""

from __future__ import annotations

import numpy as np

from .. import storage
from .select import hashes_of, pass_takes


def _index(path: str) -> tuple[np.ndarray, np.ndarray]:
    table = storage.read_parquet(path, ["tokens", "hash"])
    return (table.column("tokens").to_numpy().astype(np.int64),
            table.column("hash").to_numpy().astype(np.uint64))


def locate(doc_id: str, shard: str, seed: int, work_dir: str, bits: int) -> list[str]:
    """Lines naming the component, and per pass the Megatron shard and token range."""
    plan = storage.read_json(storage.join(work_dir, "plan.json"))
    split = storage.join(work_dir, "split")
    fs, bare = storage.filesystem(split)
    shards = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(bare, detail=False))
    if shard not in shards:
        return []
    target = hashes_of([doc_id], seed)[0]
    for entry in plan["components"]:
        slug = entry["slug"]
        outputs = storage.join(work_dir, "outputs", f"{slug}.json")
        mine = storage.join(split, shard, f"{slug}.parquet")
        if not storage.exists(mine):
            continue
        lengths, hashes = _index(mine)
        found = np.flatnonzero(hashes == target)
        if not len(found):
            continue
        if not storage.exists(outputs):  # pre_blended: one shuffled stream
            return [f"mixture component {entry['key']}; packed pre-blended (its place in the "
                    "shuffled blend is not recorded)"]
        position = int(found[0])
        docs = [_index(storage.join(split, s, f"{slug}.parquet"))
                if storage.exists(storage.join(split, s, f"{slug}.parquet"))
                else (np.zeros(0, np.int64), np.zeros(0, np.uint64)) for s in shards]
        at = shards.index(shard)
        record = storage.read_json(outputs)
        bounds = np.cumsum([0] + [s["tokens"] for s in record["shards"]])
        lines = [f"mixture component {entry['key']}: {int(lengths[position]):,} tokens, "
                 f"{entry['passes']} pass(es) of the component"]
        offset = 0
        for number, takes in enumerate(pass_takes(entry, docs, bits), start=1):
            for index, take in enumerate(takes):
                if index == at and take[position] > 0:
                    start = offset + int(take[:position].sum())
                    end = start + int(take[position])
                    part = int(np.searchsorted(bounds, start, side="right")) - 1
                    prefix = record["shards"][part]["prefix"].rsplit("/", 1)[-1]
                    inside = start - int(bounds[part])
                    lines.append(f"pass {number}: megatron/{prefix}.bin tokens "
                                 f"{inside:,}-{inside + end - start:,} of the shard"
                                 + (" (cut: the fractional epoch's share)"
                                    if end - start < lengths[position] else ""))
                offset += int(take.sum())
        if len(lines) == 1:
            lines.append("not drawn into the mix (below its cut)")
        return lines
    return ["in no mixture component (no tokens, or its kind has no weight)"]
