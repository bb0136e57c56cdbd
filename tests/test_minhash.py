"""MinHash near-dedup on real near duplicates: the same standard-library modules from two
Python builds (Debian's Python 3.11, a fixture of tests/fixtures/fetch.py, and the running
interpreter's), and perturbed copies of real files (lines deleted, blocks reordered,
identifiers renamed)."""

from __future__ import annotations

import random
import re
import shutil
import sysconfig
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datasketch import MinHash as DatasketchMinHash
from datasketch import MinHashLSH
from datasketch.lsh import _optimal_param

from lemur_data.filters.minhash import shingles as sh
from lemur_data.pipeline.build import build
from lemur_data.pipeline.manifest import ManifestError, parse_manifest
from lemur_data.stages.minhash import hashing as sig
from lemur_data.stages.minhash.params import MinHashParams, optimal_bands_rows
from tests.fixtures import debian_python_stdlib

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("email", "json", "http", "urllib", "logging", "concurrent", "xml", "wsgiref",
            "asyncio", "importlib", "unittest")
THRESHOLD = 0.7


def _real_files(root: Path) -> dict[str, str]:
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "test" in path.relative_to(root / package).parts[:-1]:
                continue  # Debian ships tests in another package
            text = path.read_text(encoding="utf-8", errors="replace")
            if len(text) > 400:
                out[str(path.relative_to(root))] = text
    return out


def _perturb(text: str, rng: random.Random) -> str:
    """A real edit: delete some lines, move a block, rename a frequent identifier."""
    lines = text.splitlines()
    drop = set(rng.sample(range(len(lines)), k=len(lines) * rng.choice([2, 5, 10, 15]) // 100))
    lines = [line for i, line in enumerate(lines) if i not in drop]
    if len(lines) > 20 and rng.random() < 0.5:
        start = rng.randrange(len(lines) - 10)
        block = lines[start:start + 8]
        del lines[start:start + 8]
        at = rng.randrange(len(lines))
        lines[at:at] = block
    text = "\n".join(lines)
    names = sorted(set(re.findall(r"\b[a-z_][a-z0-9_]{4,}\b", text)))
    if names and rng.random() < 0.7:
        old = rng.choice(names)
        text = re.sub(rf"\b{old}\b", old + "_renamed", text)
    return text


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A parquet of real files, Debian copies, and perturbed copies; path -> text."""
    ours = _real_files(STDLIB)
    debian = {k: v for root in debian_python_stdlib() for k, v in _real_files(root).items()}
    rng = random.Random(5)
    docs = {f"py/{k}": v for k, v in ours.items()}
    docs.update({f"debian/{k}": v for k, v in debian.items()})
    for name in rng.sample(sorted(ours), k=len(ours) // 2):
        docs[f"perturbed/{name}"] = _perturb(ours[name], rng)
    names = sorted(docs)
    folder = tmp_path_factory.mktemp("minhash-corpus")
    stars = [rng.choice([None, 0, 3, 50]) for _ in names]
    licenses = [rng.choice([None, "unknown", "PSF-2.0"]) for _ in names]
    pq.write_table(pa.table({"content": [docs[n] for n in names], "path": names,
                             "stars": pa.array(stars, pa.int64()), "license": licenses}),
                   folder / "docs.parquet")
    return folder / "docs.parquet", docs


def _manifest(path: Path, **minhash: object) -> dict:
    return {"name": "minhash-test", "seed": 11, "shard": {"max_docs": 120},
            "sources": [{"name": "stdlib", "kind": "code",
                         "reader": {"type": "parquet", "paths": [str(path)]},
                         "columns": {"text": "content", "path": "path", "stars": "stars",
                                     "license": "license"}}],
            "stages": [{"minhash": {"threshold": THRESHOLD, "partitions": 3, **minhash}}]}


def _run(tmp: Path, manifest: dict, workers: int | None = None) -> Path:
    run = tmp / "run"
    build(parse_manifest(manifest, base_dir=tmp), str(run), workers=workers, progress="none")
    return run


def _removed(run: Path) -> pa.Table:
    tables = [pq.read_table(p) for p in sorted(run.glob("removed/*minhash*/*.parquet"))]
    return pa.concat_tables(tables, promote_options="default")


def _representative(run: Path) -> dict[str, str]:
    """path -> the path of the document kept for its cluster (itself when kept)."""
    removed = _removed(run)
    kept = pa.concat_tables([pq.read_table(p, columns=["id", "path"])
                             for p in sorted(run.glob("stages/*minhash*/*.parquet"))])
    path_of = dict(zip(kept.column("id").to_pylist(), kept.column("path").to_pylist(),
                       strict=True))
    rep = {p: p for p in path_of.values()}
    for path, detail in zip(removed.column("path").to_pylist(),
                            removed.column("detail").to_pylist(), strict=True):
        kept_id = re.match(r"near duplicate of (\w+) \(cluster \w+, \d+ documents\)$",
                           detail).group(1)
        rep[path] = path_of[kept_id]
    return rep


def _true_pairs(docs: dict[str, str]) -> dict[tuple[str, str], float]:
    sets = {n: set(sh.shingles(t, "code", 5)) for n, t in docs.items()}
    pairs = {}
    for x, y in combinations(sorted(docs), 2):
        small, large = sorted((len(sets[x]), len(sets[y])))
        if large == 0 or small / large < THRESHOLD:
            continue  # Jaccard <= |small| / |large|
        j = sh.jaccard(sets[x], sets[y])
        if j >= THRESHOLD:
            pairs[(x, y)] = j
    return pairs


# ------------------------------------------------------------------ unit level, real files

@pytest.mark.parametrize("compiled", [True, False], ids=["numba", "numpy"])
def test_vectorized_shingle_hashes_equal_the_reference(compiled: bool) -> None:
    assert sh.shingles_kernel.AVAILABLE, "numba is a dependency: the compiled path must run"
    files = sorted(STDLIB.glob("*.py"))[:12]
    texts = [f.read_text(encoding="utf-8", errors="replace") for f in files]
    texts += ["", "   \n", "one", "a b c", "héllo wörld, ünïcode ÆØÅ names = 1",
              "Mixed CASE Words And\tTabs\r\nand more words here"]
    column = pa.array(texts, pa.large_string()).slice(1)  # a slice: offsets not from 0
    texts = texts[1:]
    for mode in sh.MODES:
        for n in (5, 2):
            hashes, offsets = sh.batch_shingle_hashes(column, mode, n, compiled=compiled)
            for i, text in enumerate(texts):
                expected = [sh.shingle_hash(s) for s in sh.shingles(text, mode, n)]
                assert hashes[offsets[i]:offsets[i + 1]].tolist() == expected, (mode, n, i)
    # a code token is an identifier: punctuation separates, case is kept
    assert sh.tokens("self.x_1 = foo(bar)", "code") == ["self", "x_1", "foo", "bar"]
    assert sh.tokens("Hello, World", "words") == ["hello", "world"]


def test_small_chunks_give_the_same_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f.read_text(encoding="utf-8") for f in sorted((STDLIB / "json").glob("*.py"))]
    column = pa.array(texts, pa.large_string())
    whole = sh.batch_shingle_hashes(column, "code", 5, compiled=False)
    monkeypatch.setattr(sh, "CHUNK_BYTES", 5000)  # many chunks, a document larger than one
    chunked = sh.batch_shingle_hashes(column, "code", 5, compiled=False)
    assert np.array_equal(whole[0], chunked[0]) and np.array_equal(whole[1], chunked[1])
    compiled = sh.batch_shingle_hashes(column, "code", 5)
    assert np.array_equal(whole[0], compiled[0]) and np.array_equal(whole[1], compiled[1])


@pytest.mark.parametrize("compiled", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("scheme", ["affine32", "legacy"])
def test_signatures_equal_datasketch_value_for_value(scheme: str, compiled: bool) -> None:
    assert sig.minhash_kernels.AVAILABLE, "numba is a dependency: the compiled path must run"
    files = sorted((STDLIB / "email").glob("*.py"))[:25]
    texts = [f.read_text(encoding="utf-8") for f in files] + ["", "x"]
    hashes, offsets = sh.batch_shingle_hashes(pa.array(texts, pa.large_string()), "code", 5)
    a, b = sig.permutations(256, 1234, scheme)
    ours = sig.signatures(hashes, offsets, a, b, scheme, compiled=compiled)
    for i in range(len(texts)):
        reference = DatasketchMinHash(num_perm=256, seed=1234, scheme=scheme, hashfunc=int)
        reference.update_batch(hashes[offsets[i]:offsets[i + 1]].tolist())
        assert np.array_equal(reference.hashvalues.astype(np.uint64), ours[i].astype(np.uint64))


@pytest.mark.parametrize(("threshold", "perms"), [(0.7, 256), (0.8, 256), (0.5, 128), (0.9, 64)])
def test_bands_rows_are_datasketchs_optimum(threshold: float, perms: int) -> None:
    assert optimal_bands_rows(threshold, perms) == _optimal_param(threshold, perms, 0.5, 0.5)
    assert optimal_bands_rows(threshold, perms, 0.1, 0.9) == \
        _optimal_param(threshold, perms, 0.1, 0.9)
    verified = MinHashParams(threshold=threshold, permutations=perms)
    assert verified.lsh_shape() == _optimal_param(threshold, perms, 0.1, 0.9)
    unverified = MinHashParams(threshold=threshold, permutations=perms, verify=False)
    assert unverified.lsh_shape() == _optimal_param(threshold, perms, 0.5, 0.5)
    assert MinHashParams(bands=16, rows=16).lsh_shape() == (16, 16)


def test_manifest_rejects_bad_lsh_shapes(tmp_path: Path) -> None:
    base = _manifest(tmp_path / "x.parquet")
    for bad, words in (({"bands": 20}, "both bands and rows"),
                       ({"bands": 30, "rows": 10}, "exceeds"),
                       ({"permutation": 128}, "unknown key")):
        base["stages"] = [{"minhash": bad}]
        with pytest.raises(ManifestError, match=words):
            parse_manifest(base, base_dir=tmp_path)


# ------------------------------------------------------------------ on Ray, real corpus

@pytest.fixture(scope="module")
def reference_run(ray_session, corpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("minhash-run")
    return _run(tmp, _manifest(corpus[0]), workers=2)


def test_recall_and_precision_on_real_near_duplicates(reference_run: Path, corpus) -> None:
    _, docs = corpus
    truth = _true_pairs(docs)
    assert len(truth) > 200  # the corpus really holds near duplicates, across the range
    assert sum(j < 0.9 for j in truth.values()) > 50
    rep = _representative(reference_run)
    found = sum(rep[x] == rep[y] for x, y in truth)
    recall = found / len(truth)
    print(f"true pairs {len(truth)}, recall {recall:.4f}")
    assert recall >= 0.95, recall

    # precision of the verified edges against the true Jaccard of the texts
    edges = pa.concat_tables([pq.read_table(p) for p in
                              sorted(reference_run.glob("work/*minhash/edges/*.parquet"))])
    meta = pa.concat_tables([pq.read_table(p) for p in
                             sorted(reference_run.glob("work/*minhash/meta/*.parquet"))])
    kept = pa.concat_tables([pq.read_table(p, columns=["id", "path"])
                             for p in sorted(reference_run.glob("stages/01-*/*.parquet"))])
    path_of_id = dict(zip(kept.column("id").to_pylist(), kept.column("path").to_pylist(),
                          strict=True))
    path_of_key = {k: path_of_id[i] for k, i in zip(meta.column("key").to_pylist(),
                                                    meta.column("id").to_pylist(), strict=True)}
    sets = {}
    good = 0
    for a, b in zip(edges.column("a").to_pylist(), edges.column("b").to_pylist(), strict=True):
        x, y = path_of_key[a], path_of_key[b]
        for p in (x, y):
            sets.setdefault(p, set(sh.shingles(docs[p], "code", 5)))
        good += sh.jaccard(sets[x], sets[y]) >= THRESHOLD
    print(f"verified edges {edges.num_rows}, precision {good / edges.num_rows:.4f}")
    assert edges.num_rows > 100
    assert good / edges.num_rows >= 0.98


def test_agrees_with_datasketch_minhashlsh(reference_run: Path, corpus) -> None:
    """datasketch's own MinHash + MinHashLSH, verified the same way, find the same clusters."""
    _, docs = corpus
    names = sorted(docs)
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=256, weights=(0.1, 0.9))  # ours with verify
    sets, minhashes = {}, {}
    for name in names:
        sets[name] = {" ".join(s).encode() for s in sh.shingles(docs[name], "code", 5)}
        minhashes[name] = DatasketchMinHash(num_perm=256, seed=11)
        minhashes[name].update_batch(sorted(sets[name]))
        lsh.insert(name, minhashes[name])
    parent = {n: n for n in names}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for name in names:
        for other in lsh.query(minhashes[name]):
            if other != name and sh.jaccard(sets[name], sets[other]) >= THRESHOLD:
                parent[root(other)] = root(name)
    theirs = Counter(root(n) for n in names)
    theirs_clustered = {n for n in names if theirs[root(n)] > 1}
    rep = _representative(reference_run)
    ours = Counter(rep[n] for n in names)
    ours_clustered = {n for n in names if ours[rep[n]] > 1}
    overlap = len(ours_clustered & theirs_clustered) / len(ours_clustered | theirs_clustered)
    print(f"clustered documents: ours {len(ours_clustered)}, datasketch "
          f"{len(theirs_clustered)}, overlap {overlap:.4f}")
    assert overlap >= 0.97, overlap
    assert abs(len(ours) - len(theirs)) <= 0.03 * (len(names) - len(theirs))


def _snapshot(run: Path) -> dict[str, bytes]:
    """Every file of a run but its timings: parquet shards, work files, markers, stats.json."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and p.name != "timings.json"}


def _interrupt(run: Path, phase: str) -> None:
    """Leave `run` as a kill in the middle of `phase` would: half its tasks done, nothing after."""
    markers = run / "markers" / "02-minhash"
    phases = ["signatures", "buckets", "verify_ship", "verify_check", "components"]
    done = sorted((markers / phase).glob("*.json"))
    for marker in done[len(done) // 2:]:
        marker.unlink()
    if phase == "signatures":  # a task killed after writing some of its files
        shard = done[-1].stem
        for path in sorted((run / "work" / "02-minhash" / "bands" / shard).glob("*"))[1:]:
            path.unlink()
        (run / "work" / "02-minhash" / "meta" / f"{shard}.parquet").unlink()
    if phase == "verify_check":
        for path in sorted((run / "work" / "02-minhash" / "edges").glob("*"))[1:]:
            path.unlink()
    (run / "work" / "02-minhash" / "edges" / f".tmp-{'d' * 32}-part-0000.parquet").write_bytes(
        b"x")  # a temporary as write_bytes_atomic names one
    for later in phases[phases.index(phase) + 1:]:
        shutil.rmtree(markers / later, ignore_errors=True)
    shutil.rmtree(run / "work" / "02-minhash" / "decisions")
    (run / "work" / "02-minhash" / "clusters.json").unlink()
    for folder in ("markers", "stages", "removed"):
        shutil.rmtree(run / folder / "03-minhash")
    (run / "stats.json").unlink()


def test_same_bytes_with_one_worker_and_after_a_kill(reference_run: Path, corpus,
                                                     tmp_path: Path) -> None:
    expected = _snapshot(reference_run)
    assert any(name.startswith("removed/03-minhash/") for name in expected)
    one = _run(tmp_path / "one", _manifest(corpus[0]), workers=1)
    assert _snapshot(one) == expected
    for phase in ("signatures", "verify_check"):
        resumed = tmp_path / f"resumed-{phase}" / "run"
        shutil.copytree(reference_run, resumed)
        _interrupt(resumed, phase)
        build(parse_manifest(_manifest(corpus[0]), base_dir=tmp_path), str(resumed),
              workers=2, progress="none")
        got = {k: v for k, v in _snapshot(resumed).items() if ".tmp-" not in k}
        assert got == expected, phase


def test_keeper_is_most_stars_then_licensed_then_smallest_id(reference_run: Path) -> None:
    docs = pa.concat_tables([pq.read_table(p, columns=["id", "path", "stars", "license"])
                             for p in sorted(reference_run.glob("stages/01-*/*.parquet"))])
    rank = {row["path"]: (-(row["stars"] or 0), row["license"] in (None, "unknown"), row["id"])
            for row in docs.to_pylist()}
    clusters: dict[str, list[str]] = {}
    for path, kept in _representative(reference_run).items():
        clusters.setdefault(kept, []).append(path)
    multi = [members for members in clusters.values() if len(members) > 1]
    assert len(multi) > 50
    for kept, members in clusters.items():
        assert min(members, key=rank.__getitem__) == kept
    stars = {row["stars"] for row in docs.to_pylist()}
    assert len(stars) > 2  # the priority was really exercised


def test_datasketch_backend_makes_the_same_decisions(reference_run: Path, corpus,
                                                     tmp_path: Path) -> None:
    theirs = _representative(_run(tmp_path, _manifest(corpus[0], backend="datasketch")))
    ours = _representative(reference_run)
    sizes = [Counter(rep.values()) for rep in (ours, theirs)]
    clustered = [{p for p, kept in rep.items() if size[kept] > 1}
                 for rep, size in zip((ours, theirs), sizes, strict=True)]
    overlap = len(clustered[0] & clustered[1]) / len(clustered[0] | clustered[1])
    print(f"numpy vs datasketch backend: clustered overlap {overlap:.4f}")
    assert overlap >= 0.97, overlap
    removed = [sum(p != kept for p, kept in rep.items()) for rep in (ours, theirs)]
    assert abs(removed[0] - removed[1]) <= 0.03 * removed[0]


def test_without_verification_lsh_candidates_make_the_clusters(reference_run: Path, corpus,
                                                                tmp_path: Path) -> None:
    bands, rows = MinHashParams(threshold=THRESHOLD).lsh_shape()  # the reference's LSH
    run = tmp_path / "run"
    result = build(parse_manifest(_manifest(corpus[0], verify=False, bands=bands, rows=rows),
                                  base_dir=tmp_path), str(run), progress="none")
    stage = next(s for s in result.stats["stages"] if s["name"] == "minhash")
    assert stage["verified_pairs"] is None and stage["lsh"]["bands"] == bands
    assert not list(run.glob("work/*minhash/shingles"))
    loose, strict = _representative(run), _representative(reference_run)
    # the same candidates, unverified: every verified cluster lies inside one loose cluster
    for members in _clusters(strict).values():
        assert len({loose[m] for m in members}) == 1
    assert stage["candidate_pairs"] >= len(_clusters(strict))


def _clusters(rep: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path, kept in rep.items():
        out.setdefault(kept, []).append(path)
    return out


def test_a_run_uses_no_more_partitions_than_shards(tmp_path: Path) -> None:
    """Partition tasks beyond the shard count only add fixed costs: a 2-shard run plans
    2 of each partitioned phase's tasks, a 12-shard run the manifest's 8."""
    from lemur_data.stages.base import GlobalContext
    from lemur_data.stages.minhash.stage import MinHash

    stage = MinHash(MinHashParams(partitions=8))
    for shards, expected in ((2, 2), (12, 8)):
        ctx = GlobalContext(str(tmp_path), str(tmp_path / "work"),
                            {f"s-{i:05d}": f"{tmp_path}/s-{i}.parquet" for i in range(shards)}, 7)
        counts = {phase.name: len(phase.tasks) for phase in stage.phases(ctx)}
        assert counts == {"signatures": shards, "buckets": expected, "verify_ship": expected,
                          "verify_check": expected, "components": 1}
        assert stage.summary(ctx)["lsh"]["partitions"] == expected


def test_a_process_switches_to_numba_once_it_has_hashed_enough(monkeypatch) -> None:
    """Auto (compiled=None) hashes with numpy until COMPILE_AFTER bytes, then with numba:
    the same hashes and signatures on both sides of the switch."""
    from lemur_data.filters.minhash import shingle_kernels

    texts = pa.array([p.read_text() for p in sorted((STDLIB / "json").glob("*.py"))])
    a, b = sig.permutations(128, 3, "affine32")
    monkeypatch.setattr(shingle_kernels, "_hashed", 0)
    monkeypatch.setattr(shingle_kernels, "COMPILE_AFTER",
                        2 * sum(len(t.encode()) for t in texts.to_pylist()))
    seen = []
    for _ in range(4):
        hashes, offsets = sh.batch_shingle_hashes(texts, "code", 5)
        seen.append((shingle_kernels.in_use(), hashes, sig.signatures(hashes, offsets, a, b,
                                                                      "affine32")))
    assert [used for used, _, _ in seen] == [False, False, True, True]
    for _, hashes, signature in seen[1:]:
        assert np.array_equal(hashes, seen[0][1]) and np.array_equal(signature, seen[0][2])


@pytest.mark.parametrize("keep_order", ["stars", "stack-v2"])
def test_small_components_write_what_polars_and_scipy_write(reference_run: Path, corpus,
                                                            tmp_path: Path, monkeypatch,
                                                            keep_order: str) -> None:
    """The components task of the reference run, redone on both sides of SMALL_EDGES
    (a union-find and Python sorts below it, scipy and polars above): byte-identical
    decisions and clusters.json."""
    from dataclasses import replace

    from lemur_data.pipeline.planner import plan_run
    from lemur_data.stages.minhash import components as cc

    plan = plan_run(parse_manifest(_manifest(corpus[0]), base_dir=tmp_path), str(reference_run))
    step = next(s for s in plan.steps if s.label.endswith("-minhash"))
    task = next(p for p in step.phases if p.name == "components").tasks[0].run
    assert isinstance(task, cc.Components)
    written: dict[int, list[bytes]] = {}
    for threshold in (0, cc.SMALL_EDGES):
        monkeypatch.setattr(cc, "SMALL_EDGES", threshold)
        out = tmp_path / str(threshold)
        redo = replace(task, keep_order=keep_order,
                       decisions_out=tuple(str(out / f"part-{n}.parquet")
                                           for n in range(len(task.decisions_out))),
                       clusters_out=str(out / "clusters.json"))
        summary = redo()
        assert summary["removed"] > 50
        written[threshold] = [Path(p).read_bytes() for p in redo.outputs()]
    assert written[0] == written[cc.SMALL_EDGES]


def test_component_labels_are_scipys(reference_run: Path) -> None:
    """On the reference run's edges and on random graphs (chains, stars, isolated pairs)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from lemur_data.stages.minhash.components import component_labels
    from lemur_data.stages.minhash.pairs import sorted_unique, unique_pairs

    edges = pa.concat_tables([pq.read_table(p) for p in
                              sorted(reference_run.glob("work/02-minhash/edges/*.parquet"))])
    a, b = unique_pairs(edges.column("a").to_numpy(), edges.column("b").to_numpy())
    nodes = sorted_unique(np.concatenate([a, b]))
    graphs = [(np.searchsorted(nodes, a), np.searchsorted(nodes, b), nodes.size)]
    rng = np.random.default_rng(4)
    for n, m in ((50, 30), (500, 700), (2000, 1500)):
        graphs.append((rng.integers(0, n, m), rng.integers(0, n, m), n))
    for i, j, n in graphs:
        graph = coo_matrix((np.ones(len(i), np.int8), (i, j)), shape=(n, n))
        count, expected = connected_components(graph, directed=False)
        got = component_labels(np.asarray(i), np.asarray(j), int(n))
        assert count > 1 and np.array_equal(got, expected)
