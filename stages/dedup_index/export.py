"""What every dedup stage's export of a finished run to its index shares.

The work files of a run's dedup steps already hold what a later run needs, for every
document those stages saw. The index keeps the rows of the documents the run KEPT (its
final output) and of the duplicates it removed in their favour, each with the id of the
kept document that stands for it (its representative). A later document that matches
any of them joins that kept document's cluster, as it would have in one build over both
corpora. Each stage writes its own section (its `export_index` hook, stages/base.py);
these are the ids and representatives they all use.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .. import storage


def kept_ids(output_shards: list[str]) -> pa.Array:
    """The ids of the run's kept documents, sorted."""
    ids = [storage.read_parquet(path, ["id"]).column("id") for path in output_shards]
    return pc.unique(pa.chunked_array([c for i in ids for c in i.chunks], pa.string())).sort()


def removed_for(decisions_dir: str) -> dict[str, str]:
    """id -> kept_id of the documents a dedup stage removed as duplicates of the run's own
    documents (not those it removed as duplicates of runs before it), from its decisions
    (parquet files with `id`, `kept_id` and `earlier`, null for the run's own)."""
    out: dict[str, str] = {}
    for path in storage.list_files(decisions_dir, ".parquet"):
        table = storage.read_parquet(path)
        if "earlier" in table.column_names:
            table = table.filter(pc.is_null(table.column("earlier")))
        out.update(zip(table.column("id").to_pylist(), table.column("kept_id").to_pylist(),
                       strict=True))
    return out


def representatives(ids: pa.Array | pa.ChunkedArray, removed: dict[str, str],
                    kept: pa.Array) -> pa.Array:
    """The kept document standing for each id: followed through the dedup removals
    (exact, then near, in whatever order the stages ran); null if none was kept (the
    survivor was removed later, e.g. by decontamination)."""
    out = []
    for doc in ids.to_pylist():
        seen = 0
        while doc in removed and seen < 64:  # a chain is at most one hop per dedup stage
            doc, seen = removed[doc], seen + 1
        out.append(doc)
    reps = pa.array(out, pa.string())
    return pc.if_else(pc.is_in(reps, value_set=kept), reps, pa.nulls(len(reps), pa.string()))
