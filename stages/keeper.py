"""Which copy survives among duplicates (exact_dedup, minhash): the `keep_order` option.

- `stars` (default): most stars, then a known licence (anything but null/`unknown`),
  then the smallest id.
- `stack-v2`: The Stack v2's order: licence class first (permissive > no licence >
  non-permissive, filters/licenses.py), then most stars, then the smallest id.

Both stages store one int8 `license_rank` per document (higher is better) and sort
by the columns `sort_keys` gives, so the decision is the same for any worker count.
"""

from __future__ import annotations

from typing import Literal

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
