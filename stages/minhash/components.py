"""Phase `components`: clusters from edges, one keeper per cluster.

Connected components over the (verified) pairs, by scipy's sparse-graph
routine, in one task: its memory is the edge list plus one int per clustered
document (16 bytes per edge, about 2 GB per 100M edges), not the corpus.
Which member survives: `keep_order` (stages/keeper.py; as exact dedup): most
stars, then a known licence, then smallest id, or The Stack v2's licence-first
order. A cluster is named by its smallest member id.

Against earlier runs, the links to earlier documents (dedup_index_match.py) join
the graph as edges to nodes of their own; every document of a component holding an
earlier node is removed with `earlier` naming the run and `kept_id` the document that
run kept for it (of the component's earlier nodes, the first run's smallest key).

Writes `decisions/part-PPPP.parquet` (shard, id, kept_id, cluster, size, earlier)
split by shard index, and `clusters.json` for stats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import storage
from ..dedup_index.format import IndexedRun
from ..keeper import KeepOrder, sort_keys
from .dedup_index import indexed_kept_ids
from .dedup_index_match import EARLIER_NODE, earlier_nodes, node_run_key, read_earlier_pairs
from .pairs import sorted_unique, unique_pairs

if TYPE_CHECKING:
    import polars as pl

DECISION_SCHEMA = pa.schema([("shard", pa.string()), ("id", pa.string()),
                             ("kept_id", pa.string()), ("cluster", pa.string()),
                             ("size", pa.int64()), ("earlier", pa.string())])
"""`earlier`: the earlier run a document near-duplicates (then `kept_id` is that run's
document, `cluster` the same and `size` null); null for this run's own clusters."""
_SIZE_BINS = [(2, 2), (3, 3), (4, 4), (5, 8), (9, 16), (17, 32), (33, 64), (65, 128),
              (129, 1024), (1025, None)]


SMALL_EDGES = 100_000
"""A components task with at most this many edges (and no earlier runs) runs without
polars and scipy (~0.5 s of imports): a union-find and Python sorts, same files
(tests/test_minhash.py checks they are byte-identical on both sides)."""


def component_labels(a: np.ndarray, b: np.ndarray, nodes: int) -> np.ndarray:
    """Connected components of the undirected graph of edges (a[i], b[i]) over `nodes`
    nodes, labelled as scipy's `connected_components` labels them: in the order of each
    component's smallest node."""
    parent = list(range(nodes))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        rx, ry = root(x), root(y)
        if rx < ry:
            parent[ry] = rx
        elif ry < rx:
            parent[rx] = ry
    roots = np.array([root(x) for x in range(nodes)], np.int64)
    # every root is its component's smallest node: labels are the roots' dense ranks
    return np.unique(roots, return_inverse=True)[1].astype(np.int32)


def _rows(path: str) -> int:
    fs, local = storage.filesystem(path)
    return pq.read_metadata(local, filesystem=fs).num_rows


def size_histogram(sizes: np.ndarray) -> dict[str, int]:
    out = {}
    for lo, hi in _SIZE_BINS:
        label = str(lo) if lo == hi else (f"{lo}-{hi}" if hi else f">={lo}")
        count = int(((sizes >= lo) & (sizes <= (hi or np.iinfo(np.int64).max))).sum())
        if count:
            out[label] = count
    return out


@dataclass(frozen=True)
class Components:
    edge_files: tuple[str, ...]
    candidate_files: tuple[str, ...]  # for counting candidate pairs when verifying
    meta_files: tuple[str, ...]
    shard_ids: tuple[str, ...]  # shard index -> shard id
    decisions_out: tuple[str, ...]  # by shard index % partitions
    clusters_out: str
    keep_order: KeepOrder = "stars"
    earlier_files: tuple[str, ...] = ()  # matches against earlier runs (pairs or edges)
    earlier: tuple[IndexedRun, ...] = ()

    def outputs(self) -> tuple[str, ...]:
        return (self.clusters_out, *self.decisions_out)

    def __call__(self) -> dict[str, Any]:
        tables = [storage.read_parquet(p, ["a", "b"]) for p in self.edge_files]
        table = pa.concat_tables(tables)
        a, b = unique_pairs(table.column("a").to_numpy(), table.column("b").to_numpy())
        candidates = (sum(_rows(p) for p in self.candidate_files) if self.candidate_files
                      else int(a.size))
        verified = int(a.size)
        if not self.earlier_files and a.size <= SMALL_EDGES:
            return self._small(a, b, candidates, verified)
        # Imported here: this module is loaded by every worker that runs a MinHash task
        # and by the driver, and polars + scipy take ~0.3 s to import; one task uses them.
        import polars as pl
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        links = read_earlier_pairs(list(self.earlier_files))
        a = np.concatenate([a, links.column("b").to_numpy()])
        b = np.concatenate([b, earlier_nodes(links.column("run").to_numpy(),
                                             links.column("a").to_numpy())])
        nodes = sorted_unique(np.concatenate([a, b]))
        if nodes.size == 0:
            labels = np.zeros(0, dtype=np.int64)
        else:
            graph = coo_matrix((np.ones(a.size, dtype=np.int8),
                                (np.searchsorted(nodes, a), np.searchsorted(nodes, b))),
                               shape=(nodes.size, nodes.size))
            _, labels = connected_components(graph, directed=False)
        # Earlier nodes sort last; a component's first one is its earliest run's smallest key.
        ours = nodes < EARLIER_NODE
        none = nodes.size  # "no earlier node in this component"
        first = np.full(int(labels.max()) + 1 if labels.size else 0, none, np.int64)
        np.minimum.at(first, labels[~ours], np.flatnonzero(~ours))
        at = first[labels[ours]]
        reached = at != none
        of_earlier = self._of_earlier(nodes[ours][reached], nodes[at[reached]])
        nodes, labels = nodes[ours][~reached], labels[ours][~reached]
        members = self._members(nodes, labels)
        by, descending = sort_keys("component", self.keep_order)
        ranked = members.sort(by, descending=descending)
        clusters = ranked.group_by("component", maintain_order=True).agg(
            pl.col("id").first().alias("kept_id"), pl.col("id").min().alias("cluster"),
            pl.len().alias("size"))
        decided = (ranked.join(clusters, on="component")
                   .filter(pl.col("id") != pl.col("kept_id"))
                   .select("key", "id", "kept_id", "cluster", "size",
                           pl.lit(None, pl.String).alias("earlier")))
        decided = pl.concat([decided, of_earlier]).with_columns(
            (pl.col("key") // (1 << 32)).alias("shard_index"))
        shard_names = pl.Series("shard", list(self.shard_ids), dtype=pl.String)
        decided = decided.with_columns(
            shard_names.gather(decided["shard_index"].cast(pl.Int64)).alias("shard"))
        partitions = len(self.decisions_out)
        for part, path in enumerate(self.decisions_out):
            rows = (decided.filter(pl.col("shard_index") % partitions == part)
                    .sort(["shard", "id"])
                    .select("shard", "id", "kept_id", "cluster", "size", "earlier"))
            storage.write_parquet_atomic(path, rows.to_arrow().cast(DECISION_SCHEMA))
        sizes = clusters["size"].to_numpy()
        top = clusters.sort(["size", "cluster"], descending=[True, False]).head(5)
        summary = {
            "candidate_pairs": int(candidates),
            "verified_pairs": verified if self.candidate_files else None,
            "clusters": int(clusters.height),
            "documents_in_clusters": int(nodes.size),
            "near_duplicates_removed": int(decided.height - of_earlier.height),
            "cluster_sizes": size_histogram(sizes),
            "largest_clusters": [{"size": int(r["size"]), "kept_id": r["kept_id"],
                                  "cluster": r["cluster"]} for r in top.iter_rows(named=True)],
        }
        if self.earlier:
            runs = of_earlier["earlier"].to_list()
            summary["against"] = [{"run": e.run, "removed": runs.count(e.run)}
                                  for e in self.earlier]
            summary["near_duplicates_of_earlier_removed"] = of_earlier.height
        storage.write_json_atomic(self.clusters_out, summary)
        return {"clusters": summary["clusters"], "removed": summary["near_duplicates_removed"]}

    def _small(self, a: np.ndarray, b: np.ndarray, candidates: int,
               verified: int) -> dict[str, Any]:
        """`__call__` without earlier runs, for at most SMALL_EDGES edges: the same files
        from a union-find and Python sorts, without polars' and scipy's imports."""
        nodes = sorted_unique(np.concatenate([a, b]))
        labels = component_labels(np.searchsorted(nodes, a), np.searchsorted(nodes, b),
                                  int(nodes.size))
        meta = self._meta_table(nodes)
        keys = meta.column("key").to_numpy()
        component = labels[np.searchsorted(nodes, keys)].tolist()
        rows = list(zip(component, meta.column("stars").to_pylist(),
                        meta.column("license_rank").to_pylist(), meta.column("id").to_pylist(),
                        keys.tolist(), strict=True))
        if self.keep_order == "stars":  # sort_keys("component", keep_order)
            rows.sort(key=lambda r: (r[0], -r[1], -r[2], r[3]))
        else:
            rows.sort(key=lambda r: (r[0], -r[2], -r[1], r[3]))
        clusters: list[tuple[str, str, int]] = []  # (kept_id, cluster, size) by component
        decided: list[tuple[str, str, str, str, int]] = []  # (shard, id, kept_id, cluster, size)
        start = 0
        while start < len(rows):
            end = start
            while end < len(rows) and rows[end][0] == rows[start][0]:
                end += 1
            members = rows[start:end]
            kept_id, cluster = members[0][3], min(r[3] for r in members)
            clusters.append((kept_id, cluster, len(members)))
            decided += [(self.shard_ids[r[4] >> 32], r[3], kept_id, cluster, len(members))
                        for r in members if r[3] != kept_id]
            start = end
        partitions = len(self.decisions_out)
        index = {shard: n for n, shard in enumerate(self.shard_ids)}
        for part, path in enumerate(self.decisions_out):
            mine = sorted(r for r in decided if index[r[0]] % partitions == part)
            columns = list(zip(*mine, strict=True)) if mine else [[] for _ in range(5)]
            out = pa.table([*(pa.array(list(c), t.type) for c, t in
                              zip(columns, list(DECISION_SCHEMA)[:5], strict=True)),
                            pa.nulls(len(mine), pa.string())], schema=DECISION_SCHEMA)
            storage.write_parquet_atomic(path, out)
        top = sorted(clusters, key=lambda c: (-c[2], c[1]))[:5]
        summary = {
            "candidate_pairs": int(candidates),
            "verified_pairs": verified if self.candidate_files else None,
            "clusters": len(clusters),
            "documents_in_clusters": int(nodes.size),
            "near_duplicates_removed": len(decided),
            "cluster_sizes": size_histogram(np.array([c[2] for c in clusters], np.int64)),
            "largest_clusters": [{"size": size, "kept_id": kept_id, "cluster": cluster}
                                 for kept_id, cluster, size in top],
        }
        storage.write_json_atomic(self.clusters_out, summary)
        return {"clusters": summary["clusters"], "removed": summary["near_duplicates_removed"]}

    def _of_earlier(self, b: np.ndarray, reached: np.ndarray) -> pl.DataFrame:
        """(key, id, kept_id, cluster, size, earlier) of this run's documents `b` whose
        components reach the earlier nodes `reached` (one per document)."""
        import polars as pl

        run, old = node_run_key(reached)
        kept_id = np.empty(b.size, dtype=object)
        for e in self.earlier:
            rows = np.flatnonzero(run == e.number)
            if rows.size:
                ids = indexed_kept_ids(e, old[rows])
                kept_id[rows] = [ids[k] for k in old[rows].tolist()]
        names = np.array([e.run for e in self.earlier] or [""], dtype=object)
        meta = self._meta(b)
        frame = pl.DataFrame({"key": b, "kept_id": kept_id.tolist(),
                              "earlier": names[run.astype(np.int64)].tolist() if b.size else []},
                             schema={"key": pl.UInt64, "kept_id": pl.String,
                                     "earlier": pl.String})
        return (meta.select("key", "id").join(frame, on="key", how="inner")
                .select("key", "id", "kept_id", pl.col("kept_id").alias("cluster"),
                        pl.lit(None, pl.UInt32).alias("size"), "earlier"))

    def _members(self, nodes: np.ndarray, labels: np.ndarray) -> pl.DataFrame:
        import polars as pl

        frame = self._meta(nodes)
        component = labels[np.searchsorted(nodes, frame["key"].to_numpy())]
        return frame.with_columns(pl.Series("component", component.astype(np.int64)))

    def _meta(self, keys: np.ndarray) -> pl.DataFrame:
        """(key, id, stars, license_rank) of `keys`, sorted by key."""
        import polars as pl

        frame = pl.from_arrow(self._meta_table(keys))
        assert isinstance(frame, pl.DataFrame)
        return frame

    def _meta_table(self, keys: np.ndarray) -> pa.Table:
        wanted = pa.array(keys, pa.uint64())
        parts = []
        for path in self.meta_files:
            meta = storage.read_parquet(path, ["key", "id", "stars", "license_rank"])
            parts.append(meta.filter(pc.is_in(meta.column("key"), wanted)))
        table = pa.concat_tables(parts) if parts else pa.schema(
            [("key", pa.uint64()), ("id", pa.string()), ("stars", pa.int64()),
             ("license_rank", pa.int8())]).empty_table()
        return table.sort_by("key")
