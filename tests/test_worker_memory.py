"""Memory that stays flat as the input grows: workers give back what a task freed, and
MinHash verification holds a bounded share of the shingle sets however often they were
shipped (tests/bench/bench_memory.py measures the whole run at 1x and 10x)."""

from __future__ import annotations

import sys
import sysconfig
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import ray.cloudpickle

from lemur_data.filters.minhash import shingles as sh
from lemur_data.pipeline import executor
from lemur_data.stages import storage
from lemur_data.stages.base import Phase, Task
from lemur_data.stages.minhash.hashing import doc_partition
from lemur_data.stages.minhash.pairs import write_pairs
from lemur_data.stages.minhash.signatures import SHINGLE_SCHEMA
from lemur_data.stages.minhash.verify import CheckPairs, ShipSets, jaccard_sorted

STDLIB = Path(sysconfig.get_paths()["stdlib"])

# The probe below runs in Ray workers, which cannot import this test module.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _churn(folder: str) -> dict[str, Any]:
    """Allocate and free ~250 MB through Arrow's I/O threads and numpy, three times (the
    first also loads codecs and starts thread pools); report memory around the last."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    from lemur_data.pipeline import worker_memory

    rounds = []
    for round_ in range(3):
        before = worker_memory.status_mb("VmRSS:")
        path = f"{folder}/churn-{round_}.parquet"
        pq.write_table(pa.table({"x": np.arange(8_000_000), "y": np.arange(8_000_000) * 3}),
                       path, row_group_size=200_000)
        back = pq.read_table(path)  # decoded by Arrow's thread pools
        total = int(back.column("y").to_numpy().sum())
        peak = worker_memory.status_mb("VmRSS:")
        del back
        worker_memory.release_memory()
        rounds.append((before, peak, worker_memory.status_mb("VmRSS:")))
    return {"pool": pa.default_memory_pool().backend_name,
            "arena_max": os.environ.get("MALLOC_ARENA_MAX"), "total": total, "rounds": rounds}


@pytest.mark.slow
def test_workers_use_allocators_that_return_freed_memory(ray_session, tmp_path: Path) -> None:
    (summary,) = executor.run_phase(
        Phase("probe", [Task("churn", lambda: _churn(str(tmp_path)))]), str(tmp_path / "m"), 1)
    assert summary["total"] == 3 * 8_000_000 * (8_000_000 - 1) // 2
    assert summary["pool"] == "system"
    assert summary["arena_max"] == "2"
    (_, _, first), *later = summary["rounds"]
    for before, peak, after in later:
        assert peak - before > 100, summary  # the churn really allocated
        assert after - first < 15, summary  # and the worker gave it back


def _sets(docs: list[str]) -> list[np.ndarray]:
    hashes, offsets = sh.batch_shingle_hashes(pa.array(docs), "code", 5)
    return [np.unique(hashes[lo:hi]) for lo, hi in zip(offsets[:-1], offsets[1:], strict=True)]


def test_verification_streams_senders_and_matches_true_jaccard(tmp_path: Path) -> None:
    """Six edited copies of real files: each document has partners in every partition, so
    every set is shipped to every partition; the edges must still be exactly the pairs at
    or above the threshold, by true Jaccard, in (a, b) order."""
    partitions, threshold = 3, 0.6
    files = sorted((STDLIB / "json").glob("*.py")) + sorted((STDLIB / "email").glob("*.py"))[:6]
    docs, keys = [], []
    for copy in range(6):
        for i, path in enumerate(files):
            lines = path.read_text().splitlines()
            kept = [line for n, line in enumerate(lines) if (n + copy) % 7]  # drop 1/7
            docs.append("\n".join(kept))
            keys.append((copy << 32) | i)
    key_arr = np.array(keys, dtype=np.uint64)
    sets = _sets(docs)
    part_of = doc_partition(key_arr, partitions)
    assert len(set(part_of.tolist())) == partitions
    shingle_files = {q: [] for q in range(partitions)}
    for q in range(partitions):
        mine = np.flatnonzero(part_of == q)
        path = str(tmp_path / "shingles" / f"part-{q}.parquet")
        storage.write_parquet_atomic(path, pa.table(
            [pa.array(key_arr[mine]), pa.array([sets[i] for i in mine], pa.list_(pa.uint32()))],
            schema=SHINGLE_SCHEMA))
        shingle_files[q].append(path)
    # Candidates: every pair (a < b); the buckets phase writes them split by a's partition.
    pairs = [(min(x, y), max(x, y)) for x, y in combinations(keys, 2)]
    a_all = np.array([p[0] for p in pairs], dtype=np.uint64)
    b_all = np.array([p[1] for p in pairs], dtype=np.uint64)
    for q in range(partitions):
        mine = doc_partition(a_all, partitions) == q
        write_pairs(str(tmp_path / "pairs" / f"qa-{q}.parquet"), a_all[mine], b_all[mine])
    shipped = []
    for q in range(partitions):
        shipped.append(ShipSets(
            (str(tmp_path / "pairs" / f"qa-{q}.parquet"),), tuple(shingle_files[q]),
            tuple(str(tmp_path / "verify" / f"from-{q}" / f"pairs-{to:04d}.parquet")
                  for to in range(partitions)),
            tuple(str(tmp_path / "verify" / f"from-{q}" / f"sets-{to:04d}.parquet")
                  for to in range(partitions)))())
    assert all(s["sets_shipped"] > len(keys) // partitions for s in shipped)  # re-shipped
    edges = []
    for q in range(partitions):
        CheckPairs(tuple(str(tmp_path / "verify" / f"from-{src}" / f"pairs-{q:04d}.parquet")
                         for src in range(partitions)),
                   tuple(str(tmp_path / "verify" / f"from-{src}" / f"sets-{q:04d}.parquet")
                         for src in range(partitions)),
                   tuple(shingle_files[q]), str(tmp_path / "edges" / f"{q}.parquet"),
                   threshold)()
        edges.append(pq.read_table(tmp_path / "edges" / f"{q}.parquet"))
    index = {k: i for i, k in enumerate(keys)}
    expected = {}
    for x, y in pairs:
        score = jaccard_sorted(sets[index[x]], sets[index[y]])
        if score >= threshold:
            expected[(x, y)] = score
    assert 0 < len(expected) < len(pairs)
    got = {}
    for table in edges:
        a, b = table.column("a").to_pylist(), table.column("b").to_pylist()
        assert list(zip(a, b, strict=True)) == sorted(zip(a, b, strict=True))
        got.update({(x, y): s for x, y, s in zip(a, b, table.column("jaccard").to_pylist(),
                                                  strict=True)})
    assert got == expected


def test_syntax_parse_keeps_no_reference_to_the_document() -> None:
    """py-tree-sitter 0.26.1 keeps a reference to every buffer its read callback returns;
    parse() must drop them, or a worker keeps every document it ever checked (measured:
    +7 MB per demo shard, carried into every later task of the worker)."""
    from tree_sitter import Parser

    from lemur_data.filters.syntax.check import load_language, parse

    parser = Parser(load_language("Python"))
    source = (STDLIB / "typing.py").read_bytes()
    for _ in range(3):
        data = bytes(bytearray(source))  # a fresh object: every reference to it is ours
        tree = parse(parser, data, timeout_s=5.0)
        assert tree.root_node.end_byte == len(data)
        del tree
        assert sys.getrefcount(data) == 2  # the name `data` and getrefcount's argument


_FIXED_COST_PROBE = """
import sys, sysconfig
from pathlib import Path
import numpy as np
from lemur_data.stages import storage
storage.skip_pandas_probe()
from lemur_data.filters.minhash.shingles import batch_shingle_hashes
from lemur_data.stages.base import ShardContext
from lemur_data.stages.minhash.hashing import permutations, signatures
from lemur_data.stages.quality.stage import Quality, QualityParams
files = sorted((Path(sysconfig.get_paths()["stdlib"]) / "json").glob("*.py"))
docs = storage.documents_table([{"id": str(p), "text": p.read_text(), "source": "s",
                                 "kind": "code", "lang": "Python"} for p in files])
stage = Quality(QualityParams())
stage.setup()
reasons = stage.apply(docs, ShardContext("s", "/tmp", 0)).reasons.to_pylist()
a, b = permutations(64, 1, "affine32")
hashes, offsets = batch_shingle_hashes(docs.column("text"), "code", 5)  # small: numpy
plain = signatures(hashes, offsets, a, b, "affine32")
small = "numba" in sys.modules
hashes, offsets = batch_shingle_hashes(docs.column("text"), "code", 5, compiled=True)
fast = signatures(hashes, offsets, a, b, "affine32", compiled=True)
same = bool((fast == plain).all()) and "numba" in sys.modules and not small
loaded = [m for m in ("pandas", "datatrove", "scipy.linalg") if m in sys.modules]
frame = docs.to_pandas()  # pandas still imports when asked for
print(len(reasons), same, loaded, type(frame).__name__, sorted(set(reasons) - {None}))
"""


def test_a_worker_skips_imports_its_code_tasks_never_use() -> None:
    """A worker's fixed cost: pyarrow's pandas probe, datatrove's text filters (code only)
    and numba's SciPy BLAS check are not imported, numba not at all for a small input,
    and what they guard still works (numba's signatures equal the numpy path's)."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", _FIXED_COST_PROBE], capture_output=True,
                         text=True, check=True).stdout.split()
    files = len(list((STDLIB / "json").glob("*.py")))
    assert out[:4] == [str(files), "True", "[]", "DataFrame"], out


_COLLECTOR_PROBE = """
import gc
from lemur_data.pipeline import worker_memory
seen = []
gc.callbacks.append(lambda phase, info: seen.append(phase == "start"))
worker_memory.hold_collector()  # as a worker's warm-up ends
held, frozen = not gc.isenabled(), gc.get_freeze_count()
from lemur_data.stages.quality import stage  # as the first task's arguments import
import email.parser, http.client, xml.dom.minidom
during = sum(seen)
worker_memory.prepare_worker()  # the first task starts
after = gc.get_freeze_count()
cycle = []
cycle.append(cycle)
del cycle
found = gc.collect()  # the task's own cycles are collected again
worker_memory.hold_collector()  # a later warm-up in the same worker: nothing held
print(held, during, gc.isenabled(), after > frozen + 10000, found >= 1, gc.isenabled())
"""


def test_a_worker_collects_nothing_while_its_first_task_imports() -> None:
    """Between a worker's warm-up and its first task, Ray unpickles the task's arguments,
    importing the stage modules: no collection then, and what they imported is frozen
    when the task starts (its full collection after it no longer walks them all: ~60
    ms), while the task itself collects as any other; once per worker."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", _COLLECTOR_PROBE], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["True", "0", "True", "True", "True", "True"], out
