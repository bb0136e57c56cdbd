"""Mix and pack into Megatron indexed datasets, read back by megatron-core itself.

Builds real runs on standard-library sources (Python packages, CPython's C
headers, pydoc's help topics) and checks the shards with megatron-core's
IndexedDataset, GPTDataset and BlendedMegatronDatasetBuilder, against the kept
documents re-tokenized by Megatron's own tokenizer.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import sysconfig
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from lemur_data.pipeline.build import BuildResult, build
from lemur_data.pipeline.executor import RunError
from lemur_data.pipeline.manifest import parse_manifest
from lemur_data.stages.mix.indexed_dataset import Packer, ShardedWriter
from lemur_data.stages.tokenize.tokenizer import DEFAULT_PACKAGE_MODEL, package_file
from tests.fixtures import python_include

warnings.filterwarnings("ignore", message=".*Transformer Engine and Apex.*")
from megatron.core.datasets.indexed_dataset import IndexedDataset  # noqa: E402 (after the filter)

PATHS = sysconfig.get_paths()
MAX_SHARD = 120_000
WEIGHTS = {"code:Python": 6, "code": 3, "text": 1}
TOTAL = 900_000


def manifest(**output: Any) -> dict[str, Any]:
    return {
        "name": "pack", "seed": 11, "shard": {"max_docs": 40, "max_bytes": "1MB"},
        "sources": [
            {"name": "stdlib", "kind": "code", "reader": {
                "type": "tree", "root": PATHS["stdlib"],
                "include": ["email/*.py", "json/*.py", "http/*.py", "urllib/*.py"]}},
            {"name": "headers", "kind": "code", "reader": {
                "type": "tree", "root": str(python_include()), "include": ["cpython/*.h"]}},
            {"name": "topics", "kind": "text", "lang": "en", "reader": {
                "type": "python_object", "object": "pydoc_data.topics:topics"}},
        ],
        "tokenizer": {},
        "mixture": {"total_tokens": TOTAL, "weights": WEIGHTS},
        "output": {"megatron": {"max_shard_bytes": MAX_SHARD, **output}},
    }


def run(folder: Path, workers: int | None = None, **output: Any) -> BuildResult:
    return build(parse_manifest(manifest(**output), base_dir=folder), str(folder / "run"),
                 workers=workers, progress="none")


def read_shard(prefix: str) -> list[np.ndarray]:
    dataset = IndexedDataset(prefix)
    # the arrays are views of an mmap that closes with the dataset: copy them
    sequences = [np.array(dataset[i], copy=True) for i in range(len(dataset))]
    del dataset
    return sequences


def megatron_files(run_dir: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((run_dir / "megatron").glob("*")) if p.suffix in (".bin", ".idx")}


def component_of(kind: str, lang: str | None) -> str:
    return "code:Python" if (kind, lang) == ("code", "Python") else kind


@pytest.fixture(scope="module")
def separate(ray_session, tmp_path_factory) -> BuildResult:
    return run(tmp_path_factory.mktemp("separate"))


@pytest.fixture(scope="module")
def megatron_tokenizer() -> Any:
    from megatron.core.tokenizers import MegatronTokenizer

    return MegatronTokenizer.from_pretrained(
        tokenizer_path=package_file(DEFAULT_PACKAGE_MODEL),
        metadata_path={"library": "sentencepiece", "model_type": "gpt"})


@pytest.fixture(scope="module")
def kept_documents(separate: BuildResult, megatron_tokenizer: Any) -> dict[str, list[list[int]]]:
    """Kept documents per component, in shard order, re-tokenized by Megatron's tokenizer."""
    run_dir = Path(separate.plan.layout.run_dir)
    out: dict[str, list[list[int]]] = {k: [] for k in WEIGHTS}
    for path in sorted((run_dir / separate.stats["output"]["dir"]).glob("shard-*.parquet")):
        table = pq.read_table(path, columns=["text", "kind", "lang"]).to_pylist()
        for row in table:
            ids = megatron_tokenizer.tokenize(row["text"]) + [megatron_tokenizer.eod]
            out[component_of(row["kind"], row["lang"])].append(ids)
    return out


def component_shards(result: BuildResult, component: str) -> list[str]:
    run_dir = Path(result.plan.layout.run_dir)
    return [str(run_dir / "megatron" / s["prefix"]) for s in result.stats["megatron"]["shards"]
            if s["component"] == component]


def test_every_shard_is_the_kept_documents_token_for_token(
        separate: BuildResult, kept_documents: dict[str, list[list[int]]]) -> None:
    plan = {c["key"]: c for c in separate.stats["mixture"]["components"]}
    # upsampled (Python x2.4, C headers x4.2) and downsampled (text x0.73) components
    assert {c: plan[c]["full_epochs"] for c in WEIGHTS} == {"code:Python": 2, "code": 4,
                                                           "text": 0}
    for component, docs in kept_documents.items():
        stream = [s.tolist() for prefix in component_shards(separate, component)
                  for s in read_shard(prefix)]
        entry = plan[component]
        assert sum(map(len, stream)) == entry["used_tokens"] == entry["target_tokens"]
        assert entry["available_docs"] == len(docs)
        # whole epochs first: every kept document, in shard order, exactly
        full = entry["full_epochs"] * len(docs)
        assert stream[:full] == docs * entry["full_epochs"]
        # then the hashed fraction: documents in order, at most one shortened (EOS kept)
        rest, shortened, position = stream[full:], 0, 0
        for sequence in rest:
            while position < len(docs) and docs[position][:len(sequence) - 1] + [
                    docs[position][-1]] != sequence:
                position += 1
            assert position < len(docs), f"{component}: a sequence matches no kept document"
            shortened += len(sequence) < len(docs[position])
            position += 1
        assert shortened <= 1
        assert 0 < len(rest) < len(docs)


def test_index_header_and_shard_sizes(separate: BuildResult) -> None:
    run_dir = Path(separate.plan.layout.run_dir)
    shards = separate.stats["megatron"]["shards"]
    for shard in shards:
        bin_path = run_dir / "megatron" / f"{shard['prefix']}.bin"
        head = (run_dir / "megatron" / f"{shard['prefix']}.idx").read_bytes()[:34]
        assert head[:9] == b"MMIDIDX\x00\x00"
        assert struct.unpack("<QBQQ", head[9:]) == (1, 8, shard["sequences"],
                                                    shard["sequences"] + 1)  # 8 = uint16
        assert bin_path.stat().st_size == shard["bytes"] == 2 * shard["tokens"]
        assert shard["bytes"] <= MAX_SHARD
    # a few large shards per component, each filled until the next sequence would not fit
    for component in WEIGHTS:
        lengths = [len(q) for p in component_shards(separate, component) for q in read_shard(p)]
        sizes, size = [], 0
        for length in lengths:
            if size and size + 2 * length > MAX_SHARD:
                sizes, size = [*sizes, size], 0
            size += 2 * length
        assert [s["bytes"] for s in shards if s["component"] == component] == [*sizes, size]
        assert len(sizes) >= 1


def test_mixture_stats_hit_the_target_ratio(separate: BuildResult) -> None:
    mixture = separate.stats["mixture"]
    assert mixture["used_tokens"] == TOTAL
    assert mixture["max_share_error"] < 0.005
    for entry in mixture["components"]:
        assert entry["target_share"] == pytest.approx(WEIGHTS[entry["key"]] / 10)
        assert abs(entry["realized_share"] / entry["target_share"] - 1) < 0.005
        assert entry["available_tokens"] > 0 and entry["used_docs"] > 0
        assert entry["realized_epochs"] == pytest.approx(
            entry["used_tokens"] / entry["available_tokens"], abs=1e-6)


def test_blended_megatron_dataset_builder_reads_data_args(
        separate: BuildResult, megatron_tokenizer: Any, tmp_path: Path) -> None:
    import torch.distributed as dist
    from megatron.core.datasets.blended_megatron_dataset_builder import (
        BlendedMegatronDatasetBuilder,
    )
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.utils import get_blend_from_list

    run_dir = Path(separate.plan.layout.run_dir)
    blend = get_blend_from_list((run_dir / "megatron" / "data_args.txt").read_text().split())
    assert blend is not None and blend[1] is not None
    assert [Path(p).name for p in blend[0]] == [
        s["prefix"] for s in separate.stats["megatron"]["shards"]]
    config = GPTDatasetConfig(
        random_seed=1234, sequence_length=256, blend=blend, split="1,0,0",
        tokenizer=megatron_tokenizer, reset_position_ids=False, reset_attention_mask=False,
        eod_mask_loss=False, path_to_cache=str(tmp_path / "cache"))
    # BlendedDataset with a cache path asks torch.distributed for the rank
    owned = not dist.is_initialized()
    if owned:
        dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}",
                                rank=0, world_size=1)
    try:
        samples = 2000
        train, _, _ = BlendedMegatronDatasetBuilder(GPTDataset, [samples, 0, 0], lambda: True,
                                                    config).build()
        assert len(train) >= samples
        counts = np.bincount(np.array(train.dataset_index), minlength=len(blend[0]))
        weights = np.array(blend[1]) / sum(blend[1])
        assert np.abs(counts - weights * len(train)).max() <= 2
        shares = {c: sum(counts[i] for i, p in enumerate(blend[0])
                         if Path(p).name.startswith(c.replace(":", "-") + "_"))
                  for c in WEIGHTS}
        for component, weight in WEIGHTS.items():
            assert shares[component] / len(train) == pytest.approx(weight / 10, abs=0.005)
        sample = train[0]["tokens"]
        assert len(sample) == 256 and int(sample.max()) < 32000
        assert not list((run_dir / "megatron").glob("cache"))  # the cache went where asked
    finally:
        if owned:
            dist.destroy_process_group()


def test_same_bytes_with_one_worker_and_after_resume(separate: BuildResult,
                                                     tmp_path: Path) -> None:
    expected = megatron_files(Path(separate.plan.layout.run_dir))
    one = run(tmp_path, workers=1)
    run_dir = Path(one.plan.layout.run_dir)
    assert megatron_files(run_dir) == expected
    # a run killed inside the mix step: some split outputs, the pack markers and a
    # half-written shard gone, the index never written
    label = next(s.label for s in one.plan.steps if s.label.endswith("-mix"))
    shutil.rmtree(run_dir / "markers" / label / "pack")
    shutil.rmtree(run_dir / "markers" / label / "data_args")
    (run_dir / "markers" / label / "split" / f"{sorted(one.plan.output_shards)[0]}.json").unlink()
    shutil.rmtree(run_dir / "work" / label / "split" / sorted(one.plan.output_shards)[0])
    first_bin = sorted((run_dir / "megatron").glob("*.bin"))[0]
    first_bin.write_bytes(first_bin.read_bytes()[:100])
    (run_dir / "megatron" / "data_args.txt").unlink()
    again = run(tmp_path, workers=2)
    assert megatron_files(run_dir) == expected
    assert again.stats["mixture"] == separate.stats["mixture"]


def test_fixed_length_packing_keeps_the_component_streams(separate: BuildResult,
                                                          tmp_path: Path) -> None:
    packed = run(tmp_path, seq_length=255)
    for component in WEIGHTS:
        plain = [s for p in component_shards(separate, component) for s in read_shard(p)]
        sequences = [s for p in component_shards(packed, component) for s in read_shard(p)]
        assert {len(s) for s in sequences[:-1]} == {256}
        assert 0 < len(sequences[-1]) <= 256
        assert np.array_equal(np.concatenate(sequences), np.concatenate(plain))


def test_pre_blended_windows_hold_the_target_mix(separate: BuildResult,
                                                 tmp_path: Path) -> None:
    blended = run(tmp_path, blend="pre_blended")
    shards = blended.stats["megatron"]["shards"]
    assert {s["component"] for s in shards} == {"blend"}
    data_args = (Path(blended.plan.layout.run_dir) / "megatron" / "data_args.txt").read_text()
    assert len(data_args.split()) == 2 * len(shards)
    owner: dict[bytes, str] = {}
    expected: list[bytes] = []
    for component in WEIGHTS:
        for prefix in component_shards(separate, component):
            for sequence in read_shard(prefix):
                owner[sequence.tobytes()] = component
                expected.append(sequence.tobytes())
    run_dir = Path(blended.plan.layout.run_dir)
    stream = [s for shard in shards for s in read_shard(str(run_dir / "megatron" /
                                                            shard["prefix"]))]
    # the same documents as the separate datasets, reordered
    assert sorted(s.tobytes() for s in stream) == sorted(expected)
    assert [owner[s.tobytes()] for s in stream[:50]] != sorted(
        owner[s.tobytes()] for s in stream[:50])
    longest = max(len(s) for s in stream)
    window = TOTAL // 6
    tokens = np.cumsum([len(s) for s in stream])
    for start in range(0, TOTAL - window, window // 2):
        inside = [s for s, end in zip(stream, tokens, strict=True)
                  if start < end <= start + window]
        size = sum(len(s) for s in inside)
        for component, weight in WEIGHTS.items():
            got = sum(len(s) for s in inside if owner[s.tobytes()] == component)
            assert abs(got - size * weight / 10) <= 2 * longest, (component, start)


def test_component_without_documents_fails_with_its_name(ray_session, tmp_path: Path) -> None:
    raw = manifest()
    raw["mixture"] = {"total_tokens": 1000, "weights": {"code:Rust": 1, "text": 1}}
    raw["sources"] = raw["sources"][2:]
    raw["stages"] = []
    with pytest.raises(RunError, match="code:Rust"):
        build(parse_manifest(raw, base_dir=tmp_path), str(tmp_path / "run"), progress="none")


def test_sharded_writer_splits_at_sequences_and_reads_back_int32(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    lengths = rng.integers(1, 400, 300)
    tokens = rng.integers(0, 2**20, int(lengths.sum())).astype(np.int32)
    writer = ShardedWriter(str(tmp_path), "wide", np.dtype(np.int32), 4000)
    cut = int(lengths[:100].sum())
    writer.add(tokens[:cut], lengths[:100])  # added in two calls: one stream all the same
    writer.add(tokens[cut:], lengths[100:])
    writer.add(np.arange(2000, dtype=np.int32), np.array([2000]))  # larger than a shard
    shards = writer.close()
    assert all(s.bytes <= 4000 for s in shards[:-1]) and shards[-1].bytes == 8000
    got = [s for shard in shards for s in read_shard(shard.prefix)]
    assert [len(s) for s in got] == [*lengths.tolist(), 2000]
    assert np.array_equal(np.concatenate(got[:-1]), tokens)
    assert IndexedDataset(shards[0].prefix).index.dtype == np.int32


def test_packer_cuts_a_document_stream_into_fixed_sequences() -> None:
    packer = Packer(5)
    out = [packer.add(np.arange(7), np.array([3, 4])), packer.add(np.arange(7, 9), np.array([2])),
           packer.add(np.arange(9, 13), np.array([4])), packer.flush()]
    assert [list(lengths) for _, lengths in out] == [[5], [], [5], [3]]
    assert np.array_equal(np.concatenate([t for t, _ in out]), np.arange(13))
