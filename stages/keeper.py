"""Which copy survives among duplicates (exact_dedup, minhash): the `keep_order` option.

- `stars` (default): most stars, then a known licence (anything but null/`unknown`),
  then the smallest id.
- `stack-v2`: The Stack v2's order: licence class first (permissive > no licence >
  non-permissive, filters/licenses.py), then most stars, then the smallest id.

Both stages store one int8 `license_rank` per document (higher is better) and sort
by the columns `sort_keys` gives, so the decision is the same for any worker count.
"""

from __future__ import annotations

from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from ..filters.licenses import CLASS_RANK, class_of

KeepOrder = Literal["stars", "stack-v2"]


def license_ranks(licenses: pa.Array | pa.ChunkedArray, order: KeepOrder,
                  license_types: pa.Array | pa.ChunkedArray | None = None) -> pa.Array:
    """`license_types`: the input's own class per document (The Stack v2's
    `license_type`), which stands where it is given."""
    if order == "stars":
        known = pc.fill_null(pc.not_equal(licenses, "unknown"), False)
        return pc.cast(known, pa.int8())
    ranks: dict[tuple[str | None, str | None], int] = {}
    values = []
    types = license_types.to_pylist() if license_types is not None else [None] * len(licenses)
    for value, given in zip(licenses.to_pylist(), types, strict=True):
        if (value, given) not in ranks:
            ranks[value, given] = CLASS_RANK[class_of(value, given)]
        values.append(ranks[value, given])
    return pa.array(values, pa.int8())


def sort_keys(group: str, order: KeepOrder) -> tuple[list[str], list[bool]]:
    """Columns and descending flags that put each group's survivor first."""
    if order == "stars":
        return [group, "stars", "license_rank", "id"], [False, True, True, False]
    return [group, "license_rank", "stars", "id"], [False, True, True, False]


KEEP_ORDER_WHY = {
    "stars": "most stars, then a known licence, then the smallest id",
    "stack-v2": "licence class (permissive > none > other), then most stars, then the "
                "smallest id",
}


def explain_duplicate(doc: dict[str, Any], entry: dict[str, Any], work: Any,
                      what: str) -> list[str]:
    """explain's lines for a dedup stage (exact_dedup, minhash): the copy a removed
    document collapsed into, or the copies a kept one survived, from the stage's
    decisions (`work/NN-<stage>/decisions/`) and its keep order."""
    order = (entry.get("params") or {}).get("keep_order", "stars")
    why = f"keep order {order}: {KEEP_ORDER_WHY.get(order, order)}"
    doc_id = doc["id"]
    removed = [r for r in work.rows("decisions", "id", [doc_id])]
    if removed:
        row = removed[0]
        if row.get("earlier"):
            return [f"{what} of {row['kept_id']} kept by earlier run {row['earlier']}"]
        size = f", cluster {row['cluster']} of {row['size']} documents" if "size" in row else ""
        return [f"{what} of {row['kept_id']}{size}; that copy survived by {why}"]
    others = work.rows("decisions", "kept_id", [doc_id])
    if others:
        size = others[0].get("size", len(others) + 1)
        return [f"the surviving copy of {size} documents ({len(others)} removed in its "
                f"favour, e.g. {sorted(r['id'] for r in others)[0]}), by {why}"]
    return [f"no {what} found"]
