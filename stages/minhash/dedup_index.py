"""The minhash section of a dedup index: written from a finished run's work files, read by a
later run's phases (stages/dedup_index/format.py has what every section shares).

Under `<run>/index/minhash/`, partitioned as the run's own work was:

- `bands/part-PPPP.parquet`: (band, bucket, key) of the indexed documents, sorted; bands
  with band % partitions == P, as the signatures phase splits them (BAND_SCHEMA);
- `docs/part-QQQQ.parquet`: (key, id, kept_id), sorted by key; document partition Q;
- `shingles/part-QQQQ.parquet`: (key, hashes) sorted by key, in small row groups, so
  verification reads only the row groups holding candidate keys (SHINGLE_SCHEMA).

The section of index.json holds the parameters that decide band buckets and shingles
(`index_params`): a later run may use the index only when every one equals its own.
Shingle sets of a run that did not verify are computed again from the minhash step's
input, for the indexed documents only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import storage
from ..base import IndexReads, IndexSource
from ..dedup_index.export import representatives
from ..dedup_index.format import (
    IndexedRun,
    IndexFiles,
    folder_bytes,
    indexed_runs,
    part_file,
    read_index,
    read_keyed,
    write_keyed,
)
from .files import WorkFiles
from .hashing import doc_partition
from .params import MinHashParams
from .signatures import SHINGLE_SCHEMA, doc_modes, shingle_hashes, unique_per_doc

SECTION = "minhash"
FORMAT = 1
"""The version of this section's files: bump it with any change to their schema or
layout (an index written before is then refused until `lemur-data index` rebuilds it)."""


def bands_file(files: IndexFiles, part: int) -> str:
    return files.section(SECTION, "bands", part_file(part))


def docs_file(files: IndexFiles, part: int) -> str:
    return files.section(SECTION, "docs", part_file(part))


def shingles_file(files: IndexFiles, part: int) -> str:
    return files.section(SECTION, "shingles", part_file(part))


def index_params(p: MinHashParams, manifest_seed: int) -> dict[str, Any]:
    """The parameters that decide band buckets and shingles (both runs must agree)."""
    bands, rows = p.lsh_shape()
    return {"seed": p.effective_seed(manifest_seed), "permutations": p.permutations,
            "bands": bands, "rows": rows, "ngram": p.ngram, "tokenizer": p.tokenizer,
            "scheme": p.scheme, "backend": p.backend}


# Writing: the section of a finished run.

def export(p: MinHashParams, source: IndexSource) -> dict[str, Any]:
    """Write the run's minhash section; return its part of index.json."""
    ctx = source.ctx
    files, work = IndexFiles(ctx.run_dir), WorkFiles(ctx.work_dir)
    shards = sorted(ctx.input_shards)  # by shard index, as the signatures phase keyed them
    docs = kept_docs(work, shards, source.kept, source.removed)
    keys = docs.column("key").combine_chunks()
    write_docs(files, docs, p.partitions)
    band_rows = sum(write_bands(files, work, shards, part, keys) for part in range(p.partitions))
    if p.verify:
        for part in range(p.partitions):
            write_shingles(files, work, shards, part, keys)
    else:
        text = TextSets([ctx.input_shards[shard] for shard in shards], p.ngram, p.tokenizer)
        write_shingles_from_text(files, text, keys.to_numpy().astype(np.uint64), p.partitions)
    return {**index_params(p, ctx.seed), "partitions": p.partitions, "docs": docs.num_rows,
            "band_rows": band_rows}


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


def write_docs(files: IndexFiles, docs: pa.Table, partitions: int) -> None:
    """docs/part-Q: (key, id, kept_id) by document partition."""
    part_of = doc_partition(docs.column("key").to_numpy(), partitions)
    for part in range(partitions):
        write_keyed(docs_file(files, part), docs.filter(pa.array(part_of == part)))


def write_bands(files: IndexFiles, work: WorkFiles, shards: list[str], part: int,
                keys: pa.Array) -> int:
    """bands/part-P: (band, bucket, key) of the kept documents, sorted."""
    tables = []
    for shard in shards:
        bands = storage.read_parquet(work.bands(shard, part))
        tables.append(bands.filter(pc.is_in(bands.column("key"), value_set=keys)))
    table = pa.concat_tables(tables).sort_by([("band", "ascending"), ("bucket", "ascending"),
                                              ("key", "ascending")])
    storage.write_parquet_atomic(bands_file(files, part), table)
    return table.num_rows


def write_shingles(files: IndexFiles, work: WorkFiles, shards: list[str], part: int,
                   keys: pa.Array) -> None:
    """shingles/part-Q from the run's own verification sets."""
    tables = []
    for shard in shards:
        sets = storage.read_parquet(work.shingles(shard, part))
        tables.append(sets.filter(pc.is_in(sets.column("key"), value_set=keys)))
    table = pa.concat_tables(tables) if tables else SHINGLE_SCHEMA.empty_table()
    write_keyed(shingles_file(files, part), table.sort_by("key"))


@dataclass(frozen=True)
class TextSets:
    """Shingle sets computed again from the minhash step's input (a run without verify)."""

    input_shards: list[str]  # by shard index (the key's high 32 bits)
    ngram: int
    tokenizer: str

    def sets(self, keys: np.ndarray) -> pa.Table:
        tables = []
        shard_of = (keys >> np.uint64(32)).astype(np.int64)
        for index in sorted(set(shard_of.tolist())):
            mine = keys[shard_of == index]
            rows = (mine & np.uint64(0xFFFFFFFF)).astype(np.int64)
            docs = storage.read_parquet(self.input_shards[index], ["text", "kind"]).take(
                pa.array(rows, pa.int64()))
            modes = doc_modes(docs.column("kind").to_pylist(), self.tokenizer)
            hashes, offsets = shingle_hashes(docs.column("text"), modes, self.ngram)
            hashes, offsets = unique_per_doc(hashes, offsets)
            lists = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)),
                                             pa.array(hashes, pa.uint32()))
            tables.append(pa.table([pa.array(mine, pa.uint64()), lists], schema=SHINGLE_SCHEMA))
        return pa.concat_tables(tables) if tables else SHINGLE_SCHEMA.empty_table()


def write_shingles_from_text(files: IndexFiles, text: TextSets, keys: np.ndarray,
                             partitions: int) -> None:
    """shingles/part-Q for every Q, computed from the kept texts: each input shard is read
    once (the sets are held together: this path is for runs that did not verify, where no
    sets were written)."""
    keys = np.sort(keys)
    sets = text.sets(keys)
    part_of = doc_partition(sets.column("key").to_numpy(), partitions)
    for part in range(partitions):
        write_keyed(shingles_file(files, part), sets.filter(pa.array(part_of == part)))


# Reading: a later run's phases.

def checked_runs(p: MinHashParams, manifest_seed: int) -> list[IndexedRun]:
    """The `against` runs, checked: refused if an index is missing, of another format,
    or made with other MinHash parameters (IndexedRunError names the parameter)."""
    return indexed_runs(p.against, SECTION, index_params(p, manifest_seed), "minhash", FORMAT)


def indexed_bands(run: IndexedRun, part: int, partitions: int) -> pa.Table:
    """The indexed run's (band, bucket, key) rows of this run's band partition `part`."""
    tables = [storage.read_parquet(bands_file(run.files, q))
              for q in run.parts_for(part, partitions)]
    table = pa.concat_tables(tables)
    band = table.column("band").to_numpy().astype(np.int64)
    return table.filter(pa.array(band % partitions == part))


def indexed_sets(run: IndexedRun, keys: np.ndarray) -> pa.Table:
    """The indexed run's shingle sets of `keys`, reading only the row groups holding them."""
    keys = np.unique(keys)
    part_of = doc_partition(keys, run.partitions)
    tables = [read_keyed(shingles_file(run.files, q), keys[part_of == q])
              for q in sorted(set(part_of.tolist()))]
    return pa.concat_tables(tables) if tables else SHINGLE_SCHEMA.empty_table()


def indexed_kept_ids(run: IndexedRun, keys: np.ndarray) -> dict[int, str]:
    """Indexed key -> the id of the document that run kept for it (itself, or the copy it
    was removed in favour of), from the docs files (row groups holding them)."""
    keys = np.unique(keys)
    part_of = doc_partition(keys, run.partitions)
    out: dict[int, str] = {}
    for q in sorted(set(part_of.tolist())):
        table = read_keyed(docs_file(run.files, q), keys[part_of == q], ["key", "kept_id"])
        out.update(zip(table.column("key").to_pylist(), table.column("kept_id").to_pylist(),
                       strict=True))
    return out


def reads(p: MinHashParams) -> list[IndexReads]:
    """What deduplicating against each `against` run reads of its index: the band buckets
    in full; ids and shingle sets only by row groups holding candidates (counted whole)."""
    out = []
    for run in p.against:
        files = IndexFiles(run)
        docs = int((read_index(run).get(SECTION) or {}).get("docs", 0))
        out.append(IndexReads(run, docs, folder_bytes(files.section(SECTION, "bands")),
                              folder_bytes(files.section(SECTION, "docs"))
                              + folder_bytes(files.section(SECTION, "shingles"))))
    return out
