"""The Megatron launch stage: the rendered command, its arithmetic, node layouts, overrides,
and every check's message, on a real built run (real .bin/.idx read by megatron-core)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lemur_data.pipeline.launch.checks import (
    bundled_flags,
    check_data,
    check_flags,
    check_gpus,
    check_indexed_datasets,
    check_layout,
    check_megatron_lm,
    check_tokenizer,
    read_data_args,
)
from lemur_data.pipeline.launch.nodes import first_slurm_host, resolve_distributed
from lemur_data.pipeline.launch.plan import TrainConfig, render, train_iters
from lemur_data.pipeline.launch.run import prepare
from lemur_data.pipeline.launch.tokenizer_files import TokenizerFiles, stage_tokenizer
from lemur_data.pipeline.manifest import ManifestError, load_manifest, parse_manifest
from lemur_data.stages.tokenize.tokenizer import TokenizerConfig
from tests.realdata import STDLIB
from tests.runs import run_build

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "lemur_data.pipeline.cli"]
LLAMA_TOKENIZER = TokenizerFiles("Llama2Tokenizer", "/data/tok/tokenizer.model",
                                 "/data/tok/tokenizer.model")
LEMUR_TRAIN = {"preset": "llama2-70b", "tensor_parallel": 8, "pipeline_parallel": 4,
               "global_batch": 1024, "nnodes": 16}


def pairs(argv: list[str]) -> dict[str, str | None]:
    """flag -> its value (None for a switch) of an argv list."""
    out: dict[str, str | None] = {}
    for i, word in enumerate(argv):
        if word.startswith("--"):
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            out[word] = None if nxt is None or nxt.startswith("--") else nxt
    return out


# ----------------------------------------------------------------------------- render

def test_llama2_70b_command_has_every_architecture_flag() -> None:
    plan = render(TrainConfig(**LEMUR_TRAIN), "/runs/lemur", 90e9, LLAMA_TOKENIZER)
    args = pairs(plan.argv())
    expected = {
        "--num-layers": "80", "--hidden-size": "8192", "--ffn-hidden-size": "28672",
        "--num-attention-heads": "64", "--group-query-attention": None,
        "--num-query-groups": "8", "--position-embedding-type": "rope",
        "--swiglu": None, "--normalization": "RMSNorm", "--norm-epsilon": "1e-05",
        "--untie-embeddings-and-output-weights": None, "--disable-bias-linear": None,
        "--seq-length": "4096", "--max-position-embeddings": "4096",
        "--padded-vocab-size": "32000", "--bf16": None,
        "--tensor-model-parallel-size": "8", "--pipeline-model-parallel-size": "4",
        "--sequence-parallel": None, "--global-batch-size": "1024", "--micro-batch-size": "1",
        "--train-iters": "21458", "--lr-decay-iters": "21458", "--lr-warmup-iters": "215",
        "--lr": "2e-05", "--min-lr": "2e-06", "--lr-decay-style": "cosine",
        "--tokenizer-type": "Llama2Tokenizer", "--tokenizer-model": "/data/tok/tokenizer.model",
        "--data-args-path": "/runs/lemur/megatron/data_args.txt", "--split": "100,0,0",
        "--save": "/runs/lemur/checkpoints", "--load": "/runs/lemur/checkpoints",
    }
    assert {k: args.get(k, "<absent>") for k in expected} == expected
    # Every flag is one Megatron-LM's parser declares, each switch without a value.
    assert check_flags(plan, None).status == "ok"
    assert check_layout(plan).status == "ok"  # TP 8 x PP 4 x DP 4 on 128 GPUs
    command = plan.command("/opt/Megatron-LM")
    assert command[0] == "torchrun" and "/opt/Megatron-LM/pretrain_gpt.py" in command


def test_torchrun_accepts_the_rendered_launcher_arguments() -> None:
    from torch.distributed.run import get_args_parser

    plan = render(TrainConfig(**LEMUR_TRAIN), "/runs/lemur", 90e9, LLAMA_TOKENIZER,
                  resolve_distributed(TrainConfig(**LEMUR_TRAIN), {}, node_rank=5,
                                      master_addr="gpu001"))
    command = plan.command("/opt/Megatron-LM")
    parsed = get_args_parser().parse_args(command[1:])
    assert (parsed.nproc_per_node, parsed.nnodes, parsed.node_rank, parsed.master_addr,
            parsed.master_port) == ("8", "16", 5, "gpu001", 29500)
    assert parsed.training_script == "/opt/Megatron-LM/pretrain_gpt.py"
    assert parsed.training_script_args == plan.argv()


def test_presets_7b_and_tiny() -> None:
    small = pairs(render(TrainConfig(preset="llama2-7b", global_batch=512), "/r", 1e9,
                         LLAMA_TOKENIZER).argv())
    assert (small["--num-layers"], small["--hidden-size"], small["--ffn-hidden-size"],
            small["--num-attention-heads"]) == ("32", "4096", "11008", "32")
    assert "--group-query-attention" not in small and "--sequence-parallel" not in small
    tiny = pairs(render(TrainConfig(preset="tiny", gpus_per_node=1, global_batch=8,
                                    seq_length=512), "/r", 1e6, LLAMA_TOKENIZER).argv())
    assert tiny["--num-layers"] == "4" and "--padded-vocab-size" not in tiny
    assert tiny["--train-iters"] == str(-(-10**6 // (8 * 512)))


def test_iterations_from_the_token_budget() -> None:
    assert train_iters(90e9, 1024, 4096) == 21458  # 21457.67 rounded up
    assert train_iters(10 * 1024 * 4096, 1024, 4096) == 10
    assert train_iters(10 * 1024 * 4096 + 1, 1024, 4096) == 11
    assert train_iters(20e6, 64, 1024) == 306


def test_checkpoint_modes() -> None:
    def load_flags(**extra) -> dict[str, str | None]:
        train = TrainConfig(**LEMUR_TRAIN, checkpoint="/ckpt/llama2-70b", **extra)
        args = pairs(render(train, "/runs/x", 90e9, LLAMA_TOKENIZER).argv())
        return {k: args.get(k, "<absent>") for k in
                ("--load", "--pretrained-checkpoint", "--finetune", "--save")}

    assert load_flags() == {"--load": "/runs/x/checkpoints", "--save": "/runs/x/checkpoints",
                            "--pretrained-checkpoint": "/ckpt/llama2-70b",
                            "--finetune": "<absent>"}
    assert load_flags(init="finetune") == {"--load": "/ckpt/llama2-70b", "--finetune": None,
                                           "--pretrained-checkpoint": "<absent>",
                                           "--save": "/runs/x/checkpoints"}
    assert load_flags(init="load")["--finetune"] == "<absent>"


def test_overrides_replace_add_and_remove_flags() -> None:
    train = TrainConfig(**LEMUR_TRAIN, overrides={
        "--lr": 1e-5, "--use-flash-attn": True, "--sequence-parallel": None,
        "--log-throughput": False, "--eval-iters": 10, "--split": "98,2,0"})
    plan = render(train, "/r", 90e9, LLAMA_TOKENIZER)
    argv = plan.argv()
    args = pairs(argv)
    assert args["--lr"] == "1e-05" and args["--eval-iters"] == "10" and args["--split"] == "98,2,0"
    assert "--use-flash-attn" in args and args["--use-flash-attn"] is None
    assert "--sequence-parallel" not in args and "--log-throughput" not in args
    assert set(plan.removed) == {"--sequence-parallel", "--log-throughput"}
    # A replaced flag keeps its place; a new one comes last.
    base = render(TrainConfig(**LEMUR_TRAIN), "/r", 90e9, LLAMA_TOKENIZER).argv()
    assert argv.index("--lr") == base.index("--lr") - 1  # --sequence-parallel came before it
    assert argv[-1] == "--use-flash-attn"
    assert check_flags(plan, None).status == "ok"


def test_overrides_megatron_would_reject_fail_the_flag_check() -> None:
    bad = TrainConfig(**LEMUR_TRAIN, overrides={"--use-flash-atn": True, "--bf16": 3,
                                                "--lr-decay-style": True})
    check = check_flags(render(bad, "/r", 90e9, LLAMA_TOKENIZER), None)
    assert check.status == "fail"
    assert "--use-flash-atn is not a Megatron-LM flag" in check.message
    assert "--bf16 is a switch" in check.message
    assert "--lr-decay-style needs a value" in check.message
    with pytest.raises(ManifestError, match=r"override keys are Megatron flags"):
        parse_manifest(_manifest(Path("/tmp"), train={"preset": "tiny",
                                                      "overrides": {"lr": 1}}))
    with pytest.raises(ManifestError, match=r"unknown preset 'llama3'"):
        parse_manifest(_manifest(Path("/tmp"), train={"preset": "llama3"}))


def test_layout_check_names_what_does_not_divide() -> None:
    odd = TrainConfig(preset="llama2-70b", tensor_parallel=8, pipeline_parallel=3,
                      global_batch=1001, nnodes=6)
    check = check_layout(render(odd, "/r", 90e9, LLAMA_TOKENIZER))
    assert check.status == "fail"
    assert "80 layers do not split over PP = 3" in check.message
    assert "global batch 1001 is not a multiple of micro batch 1 x DP 2" in check.message
    uneven = TrainConfig(preset="llama2-7b", tensor_parallel=8, nnodes=3, gpus_per_node=2)
    assert "6 GPUs (3 nodes x 2) are not a multiple of TP x PP = 8" in \
        check_layout(render(uneven, "/r", 1e9, LLAMA_TOKENIZER)).message


# ----------------------------------------------------------------------------- nodes

def test_node_layout_from_arguments_env_and_slurm() -> None:
    train = TrainConfig(**LEMUR_TRAIN)
    slurm = {"SLURM_NNODES": "4", "SLURM_NODEID": "2",
             "SLURM_JOB_NODELIST": "gpu-[017-020],login1"}
    d = resolve_distributed(train, slurm)
    assert (d.nnodes, d.node_rank, d.master_addr, d.master_port) == (4, 2, "gpu-017", 29500)
    assert d.sources["master_addr"] == "env SLURM_JOB_NODELIST"
    torch_env = {**slurm, "NNODES": "2", "NODE_RANK": "1", "MASTER_ADDR": "10.0.0.7",
                 "MASTER_PORT": "6000"}
    d = resolve_distributed(train, torch_env)
    assert (d.nnodes, d.node_rank, d.master_addr, d.master_port) == (2, 1, "10.0.0.7", 6000)
    d = resolve_distributed(train, torch_env, nnodes=8, node_rank=7, master_addr="head",
                            master_port=7000)
    assert (d.nnodes, d.node_rank, d.master_addr, d.master_port) == (8, 7, "head", 7000)
    assert set(d.sources.values()) == {"argument"}
    d = resolve_distributed(train, {})
    assert (d.nnodes, d.node_rank, d.master_addr) == (16, 0, "localhost")
    with pytest.raises(ValueError, match=r"node rank 4 .* is not in 0..3"):
        resolve_distributed(train, {"SLURM_NNODES": "4", "SLURM_NODEID": "4"})


@pytest.mark.parametrize("nodelist, first", [
    ("node001", "node001"), ("node[001-004]", "node001"), ("gpu[3,5-9],cpu1", "gpu3"),
    ("a1,b[2-3]", "a1"), ("rack[1-2]-n[07-08]", "rack1-n07")])
def test_first_slurm_host(nodelist: str, first: str) -> None:
    assert first_slurm_host(nodelist) == first


def test_script_takes_each_nodes_rank_at_run_time(tmp_path: Path) -> None:
    """One train.sh for every node: run it (torchrun replaced by a recorder on PATH) as
    node 3 of a Slurm job and check what torchrun receives."""
    train = TrainConfig(**LEMUR_TRAIN)
    slurm = {"SLURM_NNODES": "4", "SLURM_JOB_NODELIST": "gpu-[017-020]"}
    plan = render(train, "/runs/x", 90e9, LLAMA_TOKENIZER, resolve_distributed(train, slurm))
    script = tmp_path / "train.sh"
    script.write_text(plan.script())
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    checkout, bin_dir = tmp_path / "Megatron-LM", tmp_path / "bin"
    checkout.mkdir()
    (checkout / "pretrain_gpt.py").write_text("")
    bin_dir.mkdir()
    recorder = bin_dir / "torchrun"
    recorder.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    recorder.chmod(recorder.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_NODEID": "3",
           "MEGATRON_LM": str(checkout)}
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    argv = done.stdout.splitlines()
    assert argv[:10] == ["--nproc-per-node", "8", "--nnodes", "4", "--node-rank", "3",
                         "--master-addr", "gpu-017", "--master-port", "29500"]
    assert argv[10] == f"{checkout}/pretrain_gpt.py" and argv[11:] == plan.argv()
    # Not from a checkout: the script says so and stops.
    env.pop("MEGATRON_LM")
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 2 and "set MEGATRON_LM to a Megatron-LM checkout" in done.stderr


def test_rendered_values_are_never_run_by_the_shell(tmp_path: Path) -> None:
    """Issue 32: `--master-addr '$(...)'` went unquoted into train.sh and ran with it."""
    train = TrainConfig(**LEMUR_TRAIN)
    planted = tmp_path / "pwned"
    hostile = f"$(touch {planted})`touch {planted}`;touch {planted} 'x\"y\nz"
    plan = render(train, "/runs/x", 90e9, LLAMA_TOKENIZER,
                  resolve_distributed(train, {}, master_addr=hostile))
    script = tmp_path / "train.sh"
    script.write_text(plan.script())
    checkout, bin_dir = tmp_path / "Megatron-LM", tmp_path / "bin"
    checkout.mkdir()
    (checkout / "pretrain_gpt.py").write_text("")
    bin_dir.mkdir()
    recorder = bin_dir / "torchrun"
    recorder.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done\n')
    recorder.chmod(recorder.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "MEGATRON_LM": str(checkout)}
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not planted.exists()
    argv = done.stdout.split("\0")
    assert argv[argv.index("--master-addr") + 1] == hostile


@pytest.mark.parametrize("port", [0, 99999, -1])
def test_a_master_port_outside_tcp_is_refused(port: int) -> None:
    train = TrainConfig(**LEMUR_TRAIN)
    with pytest.raises(ValueError, match=f"master port {port} .* not a TCP port"):
        resolve_distributed(train, {}, master_port=port)
    with pytest.raises(ValueError, match="env MASTER_PORT"):
        resolve_distributed(train, {"MASTER_PORT": str(port)})


# ----------------------------------------------------------------------------- a real run

def _manifest(base: Path, train: dict, **extra) -> dict:
    return {
        "name": "launch-test", "seed": 7, "shard": {"max_docs": 60},
        "sources": [
            {"name": "stdlib", "kind": "code", "lang": "Python",
             "reader": {"type": "tree", "root": str(base), "include": ["*.py"]}},
            {"name": "topics", "kind": "text", "lang": "en",
             "reader": {"type": "python_object", "object": "pydoc_data.topics:topics"}}],
        "tokenizer": {},
        "mixture": {"total_tokens": 300000, "weights": {"code": 10, "text": 1}},
        "output": {"megatron": {"max_shard_bytes": "200KB"}},
        "train": train, **extra}


TINY_TRAIN = {"preset": "tiny", "gpus_per_node": 1, "global_batch": 8, "micro_batch": 8,
              "seq_length": 512}


@pytest.fixture(scope="module")
def built_run(ray_session, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """A real build of stdlib code + help topics that ends with launch/train.sh."""
    base = tmp_path_factory.mktemp("launch")
    tree = base / "tree"
    for package in ("json", "email"):
        shutil.copytree(STDLIB / package, tree / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    raw = _manifest(tree, TINY_TRAIN)
    run_build(raw, base, base / "run")
    return raw, base / "run"


def test_build_ends_with_a_runnable_train_sh(built_run: tuple[dict, Path]) -> None:
    raw, run = built_run
    script = run / "launch" / "train.sh"
    assert script.stat().st_mode & stat.S_IXUSR
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = script.read_text()
    # Every path the command reads exists: the data-args file, each prefix, the tokenizer.
    argv = text.split()
    data_args = argv[argv.index("--data-args-path") + 1]
    assert data_args == str(run / "megatron" / "data_args.txt")
    prefixes = [p for _, p in read_data_args(data_args)]
    assert len(prefixes) >= 2
    for prefix in prefixes:
        assert Path(prefix + ".bin").is_file() and Path(prefix + ".idx").is_file()
    assert Path(argv[argv.index("--tokenizer-model") + 1]).is_file()
    assert argv[argv.index("--train-iters") + 1] == str(-(-300000 // (8 * 512)))
    launch = json.loads((run / "launch" / "launch.json").read_text())
    assert launch["train_iters"] == 74 and launch["total_tokens"] == 300000
    # The data, the tokenizer and megatron-core's reader all agree.
    plan = prepare(parse_manifest(raw, base_dir=run.parent), str(run)).plan
    data, indexed = check_data(plan)
    assert data.status == "ok" and "300,000 tokens" in data.message, data.message
    assert indexed.status == "ok", indexed.message
    assert check_tokenizer(plan).status == "ok"
    assert check_layout(plan).status == "ok"
    assert script.read_text() == text  # rendering is a pure function of manifest and run


def test_megatron_core_builds_the_training_datasets_from_train_sh(
        built_run: tuple[dict, Path]) -> None:
    """What pretrain_gpt.py does with the rendered data and tokenizer flags, with
    megatron-core: blend the data-args file and draw train_iters x global_batch samples."""
    from megatron.core.datasets.blended_megatron_dataset_builder import (
        BlendedMegatronDatasetBuilder,
    )
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.utils import get_blend_from_list
    from megatron.core.tokenizers import MegatronTokenizer

    _, run = built_run
    argv = (run / "launch" / "train.sh").read_text().split()

    def value(flag: str) -> str:
        return argv[argv.index(flag) + 1]

    tokenizer = MegatronTokenizer.from_pretrained(
        tokenizer_path=value("--tokenizer-model"), metadata_path={"library": "sentencepiece"})
    assert (tokenizer.vocab_size, tokenizer.eod) == (32000, 2)  # </s>, as the data's EOS
    config = GPTDatasetConfig(
        random_seed=1234, sequence_length=int(value("--seq-length")),
        blend=get_blend_from_list(Path(value("--data-args-path")).read_text().split()),
        split=value("--split"), tokenizer=tokenizer, reset_position_ids=False,
        reset_attention_mask=False, eod_mask_loss=False, path_to_cache=None,
        mid_level_dataset_surplus=0.005)
    samples = int(value("--train-iters")) * int(value("--global-batch-size"))
    train, valid, test = BlendedMegatronDatasetBuilder(GPTDataset, [samples, 0, 0],
                                                       lambda: True, config).build()
    assert len(train) >= samples and valid is None and test is None
    sample = train[len(train) - 1]
    assert sample["tokens"].shape == (512,) and int(sample["tokens"].max()) < 32000


def _copy_run(run: Path, dest: Path) -> Path:
    """A copy of the run whose data_args.txt points at the copy's own shards."""
    shutil.copytree(run / "megatron", dest / "megatron")
    args = dest / "megatron" / "data_args.txt"
    args.write_text(args.read_text().replace(str(run), str(dest)))
    return dest


def test_data_check_messages(built_run: tuple[dict, Path], tmp_path: Path) -> None:
    raw, run = built_run
    manifest = parse_manifest(raw, base_dir=run.parent)

    def data_check(folder: Path):
        return check_data(prepare(manifest, str(folder)).plan)[0]

    empty = data_check(tmp_path / "nothing")
    assert empty.status == "fail" and "no packed data" in empty.message
    missing = _copy_run(run, tmp_path / "missing")
    prefixes = [p for _, p in read_data_args(str(missing / "megatron" / "data_args.txt"))]
    os.remove(prefixes[0] + ".bin")
    check = data_check(missing)
    assert check.status == "fail" and f"missing {prefixes[0]}.bin" in check.message
    broken = _copy_run(run, tmp_path / "broken")
    prefixes = [p for _, p in read_data_args(str(broken / "megatron" / "data_args.txt"))]
    idx = Path(prefixes[1] + ".idx")
    idx.write_bytes(idx.read_bytes()[:-8])  # a truncated index
    check = data_check(broken)
    assert check.status == "fail" and f"unreadable {prefixes[1]}.idx" in check.message
    idx.write_bytes(b"not an index at all")
    assert "bad header" in data_check(broken).message
    # megatron-core's own reader on an index whose header lies about its sequence count.
    good = Path(prefixes[2] + ".idx").read_bytes()
    liar = bytearray(good)
    liar[18:26] = (10**6).to_bytes(8, "little")
    idx.write_bytes(bytes(liar))
    check = check_indexed_datasets([prefixes[1]])
    assert check.status == "fail" and "IndexedDataset cannot read" in check.message


def _megatron_dataset(prefix: Path, documents: int) -> None:
    """A dataset of `documents` documents, written by megatron-core's own builder."""
    import numpy as np
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder

    builder = IndexedDatasetBuilder(f"{prefix}.bin", dtype=np.uint16)
    for number in range(documents):
        builder.add_item(torch.tensor([5 + number % 7] * 20 + [2], dtype=torch.int64))
        builder.end_document()
    builder.finalize(f"{prefix}.idx")


def test_a_split_leaving_a_prefix_without_valid_documents_is_refused(
        built_run: tuple[dict, Path], tmp_path: Path) -> None:
    """Issue 32: with split 98,1,1 a 14-document prefix gets no valid or test document,
    and megatron-core then loops for ever in GPTDataset._get_num_epochs."""
    from megatron.core.datasets.blended_megatron_dataset_config import (
        convert_split_vector_to_split_matrix,
        parse_and_normalize_split,
    )

    raw, run = built_run
    copy = _copy_run(run, tmp_path / "copy")
    args = copy / "megatron" / "data_args.txt"
    small, large = copy / "megatron" / "small", copy / "megatron" / "large"
    _megatron_dataset(small, 14)
    _megatron_dataset(large, 1000)
    args.write_text(f"1 {small}\n1 {large}\n")
    # megatron-core's bookends, as its builder rounds them: the small one's valid part
    matrix = convert_split_vector_to_split_matrix(parse_and_normalize_split("98,1,1"))
    assert round(matrix[1][0] * 14) == round(matrix[1][1] * 14)  # is empty
    assert round(matrix[1][0] * 1000) < round(matrix[1][1] * 1000)  # the large one's is not

    def data_check(split: str):
        manifest = parse_manifest({**raw, "train": {**raw["train"], "split": split}},
                                  base_dir=run.parent)
        return check_data(prepare(manifest, str(copy)).plan)[0]

    refused = data_check("98,1,1")
    assert refused.status == "fail", refused.message
    assert f"{small} (small) has 14 documents" in refused.message
    assert "valid and test part(s) empty" in refused.message
    assert str(large) not in refused.message
    assert data_check("100,0,0").status == "ok"
    assert data_check("50,50,0").status == "ok"  # 7 valid documents
    dry = _cli("launch", "--manifest", str(_written(raw, tmp_path, "98,1,1")), "--run-dir",
               str(copy), "--dry-run")
    assert dry.returncode == 0 and "[FAIL] data:" in dry.stderr, dry.stderr


def _written(raw: dict, folder: Path, split: str) -> Path:
    path = folder / "m.yaml"
    path.write_text(yaml.safe_dump({**raw, "train": {**raw["train"], "split": split}}))
    return path


def test_vocab_mismatch(tmp_path: Path) -> None:
    # mistral_common's v3 SentencePiece model has 32768 tokens; Llama-2's embedding 32000.
    files = stage_tokenizer(TokenizerConfig(
        package="mistral_common:data/mistral_instruct_tokenizer_240323.model.v3"), str(tmp_path))
    plan = render(TrainConfig(**LEMUR_TRAIN), str(tmp_path), 90e9, files)
    check = check_tokenizer(plan)
    assert check.status == "fail"
    assert "vocab size mismatch: the tokenizer has 32768 tokens, model llama2-70b has 32000" \
        in check.message
    # The same tokenizer fits the tiny model (padded to a multiple of 128 x TP).
    tiny = render(TrainConfig(preset="tiny", tensor_parallel=2), str(tmp_path), 1e6, files)
    assert check_tokenizer(tiny).message.endswith("32768 tokens, padded vocab 32768")
    # A padded size too small for the tokenizer.
    small = render(TrainConfig(preset="tiny", overrides={"--padded-vocab-size": 32000}),
                   str(tmp_path), 1e6, files)
    assert "padded vocab 32000 must hold the tokenizer's 32768" in check_tokenizer(small).message


def test_megatron_lm_and_gpu_messages(tmp_path: Path) -> None:
    assert "MEGATRON_LM is not set" in check_megatron_lm({}).message
    assert "is not a folder" in check_megatron_lm({"MEGATRON_LM": str(tmp_path / "x")}).message
    no_script = check_megatron_lm({"MEGATRON_LM": str(tmp_path)})
    assert no_script.status == "fail" and "has no pretrain_gpt.py" in no_script.message
    (tmp_path / "pretrain_gpt.py").write_text("")
    assert check_megatron_lm({"MEGATRON_LM": str(tmp_path)}).status == "ok"
    # A checkout whose parser does not import: the bundled list still checks the flags.
    plan = render(TrainConfig(**LEMUR_TRAIN), "/r", 90e9, LLAMA_TOKENIZER)
    check = check_flags(plan, str(tmp_path))
    assert check.status == "ok" and "could not load the parser" in check.message
    assert check_gpus(8, (0, "nvidia-smi")).message.startswith("no GPU on this node")
    assert "has 4 GPU(s) (torch.cuda), train.gpus_per_node is 8" in \
        check_gpus(8, (4, "torch.cuda")).message
    assert check_gpus(8, (8, "torch.cuda")).status == "ok"


def test_bundled_flag_list_is_megatrons() -> None:
    flags = bundled_flags()
    assert len(flags) > 600
    assert flags["--data-args-path"] == "value" and flags["--swiglu"] == "switch"


# ----------------------------------------------------------------------------- CLI

def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("RAY_ADDRESS", "MEGATRON_LM") and not k.startswith("SLURM_")}
    return subprocess.run([*CLI, *args], cwd=REPO, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_cli_dry_run_prints_and_real_run_refuses_without_gpus(built_run: tuple[dict, Path],
                                                              tmp_path: Path) -> None:
    raw, run = built_run
    manifest = tmp_path / "m.yaml"
    manifest.write_text(yaml.safe_dump(raw))
    common = ["launch", "--manifest", str(manifest), "--run-dir", str(run)]
    dry = _cli(*common, "--dry-run", "--nnodes", "2", "--master-addr", "head0",
               env={"SLURM_NODEID": "1"})
    assert dry.returncode == 0, dry.stderr
    shebang = dry.stdout.split("\n", 1)[0]
    assert shebang.startswith("#!/") and shebang.endswith("/env bash"), shebang
    assert "pretrain_gpt.py" in dry.stdout
    assert "DEFAULT_NNODES=2" in dry.stdout and "DEFAULT_MASTER_ADDR=head0" in dry.stdout
    assert "node 1 of 2" in dry.stderr and "node_rank from env SLURM_NODEID" in dry.stderr
    assert "[ok  ] data:" in dry.stderr and "[FAIL] megatron-lm: MEGATRON_LM is not set" \
        in dry.stderr
    assert "dry run: not launched" in dry.stderr
    checkout = tmp_path / "Megatron-LM"
    checkout.mkdir()
    (checkout / "pretrain_gpt.py").write_text("")
    real = _cli(*common, env={"MEGATRON_LM": str(checkout)})
    assert real.returncode == 2
    assert "[FAIL] gpus: no GPU on this node" in real.stderr
    assert "refusing to launch: 1 check(s) failed (gpus)" in real.stderr
    usage = _cli(*common, "--node-rank", "3")
    assert usage.returncode == 2 and "node rank 3" in usage.stderr
    # Rendered again without node arguments: the manifest's one node.
    prepare(parse_manifest(raw, base_dir=run.parent), str(run))
    assert "DEFAULT_NNODES=1" in (run / "launch" / "train.sh").read_text()


@pytest.mark.parametrize("name, iters", [("demo.yaml", 306), ("lemur-90b.yaml", 21458)])
def test_shipped_manifests_render(name: str, iters: int, tmp_path: Path) -> None:
    manifest = load_manifest(REPO / "manifests" / name)
    assert manifest.train is not None
    plan = render(manifest.train, str(tmp_path), manifest.mixture.total_tokens,
                  LLAMA_TOKENIZER)
    assert plan.iters == iters
    assert check_layout(plan).status == "ok" and check_flags(plan, None).status == "ok"


def test_train_section_is_validated_and_left_out_of_the_fingerprint() -> None:
    base = Path("/tmp")
    one = parse_manifest(_manifest(base, TINY_TRAIN))
    other = parse_manifest(_manifest(base, {**TINY_TRAIN, "overrides": {"--lr": 1e-4}}))
    assert one.fingerprint() == other.fingerprint()  # retuning training keeps the run folder
    raw = _manifest(base, TINY_TRAIN)
    raw["mixture"]["total_tokens"] = 1e6
    assert parse_manifest(raw).fingerprint() != one.fingerprint()
    raw = _manifest(base, TINY_TRAIN)
    del raw["mixture"], raw["output"]
    with pytest.raises(ManifestError, match=r"train: needs data to train on"):
        parse_manifest(raw)
    relative = parse_manifest(_manifest(base, {**TINY_TRAIN, "checkpoint": "ckpt/base"}),
                              base_dir=base)
    assert relative.train is not None and relative.train.checkpoint == "/tmp/ckpt/base"
