"""What the output shards hold: tokens, licenses, length histograms, and the stages' parts.

stats.json's stage counts are counts of decisions; these figures describe the
kept documents themselves. Each task of the run's last document step computes
them for its shard while the documents are in memory (`shard_profile`, saved in
its summary), and the driver adds the shards up (`merge_profiles`): no shard is
read twice, and every document counts. Bins are fixed and the merge sums in
shard order, so the result is the same on every run of the same manifest.
A stage adds figures of its own columns through its `profile` hook (stages/hooks.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..stages import storage
from ..stages.hooks import StageHooks
from ..stages.registry import listed_hooks

# Log-spaced bin edges, 4 per decade: 1 byte (or token) to 10^9.
EDGES = [round(10 ** (i / 4)) for i in range(0, 37)]
_READ = ("text", "source", "kind", "lang", "license", "tokens")
"""The columns `shard_profile` looks at (not the token ids, the largest column), besides
the stages' `profile_columns`."""
Profilers = tuple[type[StageHooks], ...]


def _named(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Missing and empty names count as "unknown"."""
    return pc.if_else(pc.fill_null(pc.not_equal(column, ""), False), column, "unknown")


def _tally(table: pa.Table, keys: list[str], value: str | None = None) -> dict[str, Any]:
    """{key: count} (nested for two keys) of rows, or of the sum of `value`."""
    spec = [(value, "sum")] if value else [([], "count_all")]
    grouped = table.group_by(keys).aggregate(spec).to_pylist()
    total = f"{value}_sum" if value else "count_all"
    out: dict[str, Any] = {}
    for row in grouped:
        inner = out
        for key in keys[:-1]:
            inner = inner.setdefault(row[key], {})
        inner[row[keys[-1]]] = int(row[total] or 0)
    return out


def _histograms(values: np.ndarray, kinds: np.ndarray) -> dict[str, list[int]]:
    return {kind: np.histogram(np.clip(values[kinds == kind], 1, EDGES[-1] - 1),
                               bins=EDGES)[0].tolist()
            for kind in sorted(set(kinds.tolist()))}


def shard_profile(docs: pa.Table, profilers: Profilers = ()) -> dict[str, Any]:
    """The figures of one shard's documents, as sums that `merge_profiles` adds up;
    `profilers`: the stages of the run, whose `profile` hooks add theirs."""
    names = set(docs.column_names)
    keys = pa.table({"kind": docs.column("kind"), "lang": _named(docs.column("lang")),
                     "license": _named(docs.column("license")),
                     "source": _named(docs.column("source"))})
    kinds = keys.column("kind").to_numpy(zero_copy_only=False)
    lengths = pc.binary_length(docs.column("text")).to_numpy(zero_copy_only=False)
    out: dict[str, Any] = {"shards": 1,
                           "docs_by_kind_lang": _tally(keys, ["kind", "lang"]),
                           "by_license": _tally(keys, ["license"]),
                           "length_counts": _histograms(lengths, kinds)}
    if "tokens" in names:
        keys = keys.append_column("tokens", docs.column("tokens").cast(pa.int64()))
        for key in ("source", "lang", "kind"):
            out[f"tokens_by_{key}"] = _tally(keys, [key], "tokens")
        out["token_counts"] = _histograms(
            keys.column("tokens").to_numpy(zero_copy_only=False), kinds)
    named = docs.set_column(docs.schema.get_field_index("lang"), "lang", keys.column("lang"))
    stages: dict[str, Any] = {}
    for stage in profilers:
        stages.update(stage.profile(named))
    if stages:
        out["stages"] = stages
    return out


def _add(into: dict[str, Any], part: dict[str, Any]) -> None:
    """Add `part` into `into`: numbers summed, histograms summed bin by bin."""
    for key, value in part.items():
        if isinstance(value, dict):
            _add(into.setdefault(key, {}), value)
        elif isinstance(value, list):
            into[key] = [a + b for a, b in zip(into.get(key, [0] * len(value)), value,
                                               strict=True)]
        else:
            into[key] = into.get(key, 0) + value


def merge_profiles(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of the whole output from the shards' `shard_profile`s."""
    total: dict[str, Any] = {}
    for part in parts:
        _add(total, part)

    def by_key(counts: dict[str, int]) -> dict[str, int]:
        return dict(sorted(counts.items()))

    shards = total.get("shards", 0)
    out: dict[str, Any] = {
        "shards": shards,
        "by_license": dict(sorted(total.get("by_license", {}).items(),
                                  key=lambda kv: (-kv[1], kv[0]))),
        "docs_by_kind_lang": {k: by_key(c) for k, c in
                              sorted(total.get("docs_by_kind_lang", {}).items())},
        "length_histogram": {"unit": "bytes", "edges": EDGES,
                             "counts": by_key(total.get("length_counts", {}))},
    }
    if "tokens_by_kind" in total:
        out["tokens"] = sum(total["tokens_by_kind"].values())
        for key in ("source", "lang", "kind"):
            out[f"tokens_by_{key}"] = by_key(total[f"tokens_by_{key}"])
        out["token_histogram"] = {"unit": "tokens", "edges": EDGES,
                                  "counts": by_key(total["token_counts"])}
    for key, counts in sorted(total.get("stages", {}).items()):  # the stages' own figures
        out[key] = _sorted(counts)
    return out


def _sorted(value: Any) -> Any:
    return {k: _sorted(v) for k, v in sorted(value.items())} if isinstance(value, dict) \
        else value


def profile_output(paths: list[str], profilers: Profilers | None = None) -> dict[str, Any]:
    """The same figures read back from finished shards (for runs and tools without the
    task summaries); `profilers` default to every stage a manifest may list."""
    profilers = tuple(listed_hooks()) if profilers is None else profilers
    wanted = list(dict.fromkeys([*_READ, *(c for s in profilers for c in s.profile_columns)]))
    parts = []
    for path in sorted(paths):
        fs, local = storage.filesystem(path)
        with fs.open(local, "rb") as handle:
            parquet = pq.ParquetFile(handle)
            names = set(parquet.schema_arrow.names)
            parts.append(shard_profile(parquet.read(columns=[c for c in wanted if c in names]),
                                       profilers))
    return merge_profiles(parts)
