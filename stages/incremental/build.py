"""Building a finished run's dedup index from its dedup work files and its kept ids.

The work files of the run's exact_dedup and minhash steps already hold what a later
run needs (content hashes; band buckets, document keys and shingle sets), for every
document those stages saw. The index keeps the rows of the documents the run KEPT
(its final output) and of the duplicates it removed in their favour, each with the id
of the kept document that stands for it (its representative), merged across shards
and partitioned as the work was (index.py describes the files). A later document that
matches any of them joins that kept document's cluster, as it would have in one build
over both corpora. Shingle sets of a run that did not verify are computed again from
the minhash step's input, for the indexed documents only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import storage
from ..exact_dedup import hash_file
from ..minhash.files import WorkFiles
from ..minhash.hashing import doc_partition
from ..minhash.signatures import SHINGLE_SCHEMA
from .index import IndexFiles, write_keyed


def kept_ids(output_shards: list[str]) -> pa.Array:
    """The ids of the run's kept documents, sorted."""
    ids = [storage.read_parquet(path, ["id"]).column("id") for path in output_shards]
    return pc.unique(pa.chunked_array([c for i in ids for c in i.chunks], pa.string())).sort()


def removed_for(decision_dirs: list[str]) -> dict[str, str]:
    """id -> kept_id of the documents the run's dedup stages removed as duplicates of its
    own documents (not those it removed as duplicates of runs before it)."""
    out: dict[str, str] = {}
    for folder in decision_dirs:
        for path in storage.list_files(folder, ".parquet"):
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


def _is_in(column: pa.ChunkedArray | pa.Array, values: pa.Array) -> pa.Array:
    return pc.is_in(column, value_set=values)


def exact_partition(files: IndexFiles, work_dir: str, shards: list[str], part: int,
                    kept: pa.Array, removed: dict[str, str]) -> int:
    """index/exact/part-P: (hash, id of the representative), one row per hash, sorted."""
    tables = [storage.read_parquet(hash_file(work_dir, shard, part), ["hash", "id"])
              for shard in shards]
    table = pa.concat_tables(tables) if tables else pa.schema(
        [("hash", pa.string()), ("id", pa.string())]).empty_table()
    table = table.set_column(1, "id", representatives(table.column("id"), removed, kept))
    table = table.filter(pc.is_valid(table.column("id"))).sort_by([("hash", "ascending"),
                                                                   ("id", "ascending")])
    hashes = table.column("hash").to_pylist()
    first = [i == 0 or hashes[i] != hashes[i - 1] for i in range(len(hashes))]
    table = table.filter(pa.array(first, pa.bool_()))
    storage.write_parquet_atomic(files.exact(part), table)
    return table.num_rows


def kept_docs(work: WorkFiles, shards: list[str], kept: pa.Array,
              removed: dict[str, str]) -> pa.Table:
    """(key, id, kept_id) of the documents the minhash stage saw that have a kept
    representative, sorted by key."""
    tables = []
    for shard in shards:
        meta = storage.read_parquet(work.meta(shard), ["key", "id"])
        meta = meta.append_column("kept_id", representatives(meta.column("id"), removed, kept))
        tables.append(meta.filter(pc.is_valid(meta.column("kept_id"))))
    table = pa.concat_tables(tables) if tables else pa.schema(
        [("key", pa.uint64()), ("id", pa.string()), ("kept_id", pa.string())]).empty_table()
    return table.sort_by("key")


def minhash_docs(files: IndexFiles, docs: pa.Table, partitions: int) -> None:
    """index/minhash/docs/part-Q: (key, id, kept_id) by document partition."""
    part_of = doc_partition(docs.column("key").to_numpy(), partitions)
    for part in range(partitions):
        write_keyed(files.docs(part), docs.filter(pa.array(part_of == part)))


def minhash_bands(files: IndexFiles, work: WorkFiles, shards: list[str], part: int,
                  keys: pa.Array) -> int:
    """index/minhash/bands/part-P: (band, bucket, key) of the kept documents, sorted."""
    tables = []
    for shard in shards:
        bands = storage.read_parquet(work.bands(shard, part))
        tables.append(bands.filter(_is_in(bands.column("key"), keys)))
    table = pa.concat_tables(tables).sort_by([("band", "ascending"), ("bucket", "ascending"),
                                              ("key", "ascending")])
    storage.write_parquet_atomic(files.bands(part), table)
    return table.num_rows


def minhash_shingles(files: IndexFiles, work: WorkFiles, shards: list[str], part: int,
                     keys: pa.Array) -> None:
    """index/minhash/shingles/part-Q from the run's own verification sets."""
    tables = []
    for shard in shards:
        sets = storage.read_parquet(work.shingles(shard, part))
        tables.append(sets.filter(_is_in(sets.column("key"), keys)))
    table = pa.concat_tables(tables) if tables else SHINGLE_SCHEMA.empty_table()
    write_keyed(files.shingles(part), table.sort_by("key"))


@dataclass(frozen=True)
class TextSets:
    """Shingle sets computed again from the minhash step's input (a run without verify)."""

    input_shards: list[str]  # by shard index (the key's high 32 bits)
    ngram: int
    tokenizer: str

    def sets(self, keys: np.ndarray) -> pa.Table:
        from ..minhash.signatures import (
            _shingle_hashes,
            _unique_per_doc,
            doc_modes,
        )

        tables = []
        shard_of = (keys >> np.uint64(32)).astype(np.int64)
        for index in sorted(set(shard_of.tolist())):
            mine = keys[shard_of == index]
            rows = (mine & np.uint64(0xFFFFFFFF)).astype(np.int64)
            docs = storage.read_parquet(self.input_shards[index], ["text", "kind"]).take(
                pa.array(rows, pa.int64()))
            modes = doc_modes(docs.column("kind").to_pylist(), self.tokenizer)
            hashes, offsets = _shingle_hashes(docs.column("text"), modes, self.ngram)
            hashes, offsets = _unique_per_doc(hashes, offsets)
            lists = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)),
                                             pa.array(hashes, pa.uint32()))
            tables.append(pa.table([pa.array(mine, pa.uint64()), lists], schema=SHINGLE_SCHEMA))
        return pa.concat_tables(tables) if tables else SHINGLE_SCHEMA.empty_table()


def minhash_shingles_from_text(files: IndexFiles, text: TextSets, keys: np.ndarray,
                               partitions: int) -> None:
    """index/minhash/shingles/part-Q for every Q, computed from the kept texts: each input
    shard is read once (the sets are held together: this path is for runs that did not
    verify, where no sets were written)."""
    keys = np.sort(keys)
    sets = text.sets(keys)
    part_of = doc_partition(sets.column("key").to_numpy(), partitions)
    for part in range(partitions):
        write_keyed(files.shingles(part), sets.filter(pa.array(part_of == part)))
