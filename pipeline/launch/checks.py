"""Checks before a Megatron launch, each with its own message: layout, data, tokenizer,
Megatron-LM checkout, flags, GPUs.

A failed check refuses the launch; a skipped one says what it could not verify and why.
megatron-core is optional here (it needs torch): when it is missing the `.idx` files
are still checked by our own reader, and the report says megatron-core was not used.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np

from ...stages.mix.indexed_dataset import DTYPE_CODES, INDEX_HEADER
from ...stages.tokenize.tokenizer import TokenizerConfig, load_tokenizer
from .plan import LaunchPlan
from .presets import PRESETS

Status = Literal["ok", "fail", "skip"]
_ITEMSIZE = {code: dtype.itemsize for dtype, code in DTYPE_CODES.items()}


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    message: str

    def line(self) -> str:
        mark = {"ok": "ok  ", "fail": "FAIL", "skip": "skip"}[self.status]
        return f"[{mark}] {self.name}: {self.message}"


def run_checks(plan: LaunchPlan, env: Mapping[str, str] | None = None) -> list[Check]:
    env = os.environ if env is None else env
    megatron = check_megatron_lm(env)
    return [check_layout(plan), *check_data(plan), check_tokenizer(plan), megatron,
            check_flags(plan, env.get("MEGATRON_LM") if megatron.status == "ok" else None),
            check_gpus(plan.train.gpus_per_node)]


def failed(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.status == "fail"]


# ----------------------------------------------------------------------------- layout


def _int(value: object) -> int:
    """A numeric Megatron flag's value: an int, or its text as given in `overrides`."""
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"{value!r} is not a number")

def check_layout(plan: LaunchPlan) -> Check:
    """Megatron's own divisibility rules, so a bad layout fails here and not after start-up."""
    train, flags = plan.train, plan.flags
    tp, pp = train.tensor_parallel, train.pipeline_parallel
    world = plan.world_size
    problems = []
    if world % (tp * pp):
        problems.append(f"{world} GPUs ({plan.distributed.nnodes} nodes x "
                        f"{train.gpus_per_node}) are not a multiple of TP x PP = {tp * pp}")
    dp = max(world // (tp * pp), 1)
    layers, heads = _int(flags["--num-layers"]), _int(flags["--num-attention-heads"])
    groups = _int(flags.get("--num-query-groups", heads))
    if layers % pp:
        problems.append(f"{layers} layers do not split over PP = {pp} stages")
    if heads % tp or groups % tp:
        problems.append(f"{heads} heads / {groups} query groups do not split over TP = {tp}")
    if train.global_batch % (train.micro_batch * dp):
        problems.append(f"global batch {train.global_batch} is not a multiple of micro batch "
                        f"{train.micro_batch} x DP {dp}")
    if problems:
        return Check("layout", "fail", "; ".join(problems))
    return Check("layout", "ok", f"TP {tp} x PP {pp} x DP {dp} on {world} GPUs; "
                 f"{plan.iters} iterations of {train.global_batch} x {train.seq_length} tokens "
                 f"({plan.total_tokens:,} tokens budgeted)")


# ----------------------------------------------------------------------------- data

def read_data_args(path: str) -> list[tuple[float, str]]:
    """Weight/prefix pairs of a `--data-args-path` file."""
    text = Path(path).read_text()
    _refuse_whitespace_paths(path, text)
    words = text.split()  # as Megatron-LM reads it
    if len(words) % 2:
        raise ValueError(f"{path}: expected `weight prefix` pairs, got {len(words)} words")
    pairs = []
    for weight, prefix in zip(words[::2], words[1::2], strict=True):
        try:
            pairs.append((float(weight), prefix))
        except ValueError:
            raise ValueError(f"{path}: {weight!r} is not a weight (expected `weight prefix` "
                             f"pairs)") from None
    return pairs


def _refuse_whitespace_paths(path: str, text: str) -> None:
    """Name the cause when a prefix holds whitespace: Megatron-LM splits the file on any
    whitespace, so `0.5 /runs/my run/megatron/x` reads as a weight `run/megatron/x`."""
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.strip().split(None, 1)
        if len(parts) == 2 and any(c.isspace() for c in parts[1].strip()):
            try:
                float(parts[0])
            except ValueError:
                continue  # not our one-pair-per-line layout: the word check reports it
            raise ValueError(f"{path} line {number}: the shard path {parts[1].strip()!r} "
                             "holds whitespace, which Megatron-LM's --data-args-path reader "
                             "splits into separate words; rebuild in a run folder whose path "
                             "has no spaces")


def read_index(prefix: str) -> tuple[int, int]:
    """(sequences, tokens) of an indexed dataset, checking the `.idx` layout and `.bin` size
    as megatron-core's reader would find them."""
    head = len(INDEX_HEADER) + 8 + 1 + 8 + 8
    with open(prefix + ".idx", "rb") as handle:
        start = handle.read(head)
    if len(start) < head or not start.startswith(INDEX_HEADER):
        raise ValueError("not a megatron-core index (bad header)")
    version, code, sequences, documents = struct.unpack_from("<QBQQ", start, len(INDEX_HEADER))
    if version != 1 or code not in _ITEMSIZE:
        raise ValueError(f"unknown index version {version} or dtype code {code}")
    expected = head + sequences * (4 + 8) + documents * 8
    actual = os.path.getsize(prefix + ".idx")
    if actual != expected:
        raise ValueError(f"index is {actual} bytes, its header implies {expected}")
    # A 90B-token corpus has ~10^8 sequences: sum their lengths off a map, not a copy.
    lengths = np.memmap(prefix + ".idx", np.int32, "r", head, (sequences,)) if sequences \
        else np.zeros(0, np.int32)
    tokens = int(lengths.sum(dtype=np.int64))
    del lengths
    size = os.path.getsize(prefix + ".bin")
    if size != tokens * _ITEMSIZE[code]:
        raise ValueError(f"{prefix}.bin is {size} bytes, the index says "
                         f"{tokens * _ITEMSIZE[code]}")
    return sequences, tokens


def check_data(plan: LaunchPlan) -> list[Check]:
    path = plan.paths.data_args
    if "://" in path:
        return [Check("data", "fail", f"{path} is remote: Megatron-LM reads local files; copy "
                      "the run's megatron/ folder to a filesystem the nodes share")]
    if not os.path.isfile(path):
        return [Check("data", "fail", f"no packed data: {path} is missing (run `lemur-data "
                      "build` with a mixture or output.megatron first)")]
    try:
        pairs = read_data_args(path)
    except ValueError as error:
        return [Check("data", "fail", str(error))]
    if not pairs:
        return [Check("data", "fail", f"{path} lists no datasets")]
    problems, tokens = [], 0
    for _, prefix in pairs:
        missing = [prefix + s for s in (".bin", ".idx") if not os.path.isfile(prefix + s)]
        if missing:
            problems.append("missing " + " and ".join(missing))
            continue
        try:
            sequences, prefix_tokens = read_index(prefix)
        except (ValueError, struct.error) as error:
            problems.append(f"unreadable {prefix}.idx: {error}")
            continue
        tokens += prefix_tokens
        problems += split_problems(prefix, sequences, plan.train.split)
    if problems:
        return [Check("data", "fail", f"{len(problems)} of {len(pairs)} datasets in {path}: "
                      + "; ".join(problems))]
    epochs = plan.iters * plan.train.global_batch * plan.train.seq_length / max(tokens, 1)
    return [Check("data", "ok", f"{len(pairs)} datasets, {tokens:,} tokens in {path} "
                  f"(training reads them {epochs:.2f} times)"),
            check_indexed_datasets([p for _, p in pairs])]


SPLIT_PARTS = ("train", "valid", "test")


def split_ranges(split: str, count: int) -> list[tuple[int, int] | None]:
    """[begin, end) of each of train, valid, test for a dataset of `count` sequences, None
    for a part with no share: megatron-core's own arithmetic (GPTDataset splits by
    sequence: BlendedMegatronDatasetBuilder._build_megatron_dataset_splits), from
    megatron-core itself when it is installed."""
    try:
        from megatron.core.datasets.blended_megatron_dataset_config import (
            convert_split_vector_to_split_matrix,
            parse_and_normalize_split,
        )
        matrix = convert_split_vector_to_split_matrix(parse_and_normalize_split(split))
    except ImportError:  # the same rules, written out
        shares = [float(s) for s in split.split(",")] + [0.0] * 3
        total = sum(shares[:3])
        edges = [0.0]
        for share in shares[:3]:
            edges.append(edges[-1] + share / total)
        matrix = [(a, b) if b > a else None for a, b in zip(edges, edges[1:], strict=False)]
    return [None if part is None else
            (int(round(part[0] * float(count))), int(round(part[1] * float(count))))
            for part in matrix]


def split_problems(prefix: str, count: int, split: str) -> list[str]:
    """A part that has a share of the split but no sequence of this dataset: megatron-core
    builds it anyway and then loops for ever (GPTDataset._get_num_epochs never reaches
    its sample count with 0 tokens)."""
    empty = [name for name, part in zip(SPLIT_PARTS, split_ranges(split, count), strict=True)
             if part is not None and part[1] <= part[0]]
    if not empty:
        return []
    return [f"{prefix} ({os.path.basename(prefix)}) has {count:,} documents: train.split "
            f"{split!r} leaves its {' and '.join(empty)} part(s) empty, on which megatron-core "
            "would loop for ever; give the split's valid and test parts 0, larger shares, "
            "or this dataset more documents"]


def check_indexed_datasets(prefixes: list[str]) -> Check:
    """Open every dataset with megatron-core's own IndexedDataset, as GPTDataset will."""
    try:
        from megatron.core.datasets.indexed_dataset import IndexedDataset
    except ImportError as error:
        return Check("megatron-core", "skip", f"megatron-core is not installed here ({error}); "
                     "the .idx files were checked by lemur-data's reader only (pip install "
                     "megatron-core, after torch, to check them with Megatron's)")
    problems = []
    for prefix in prefixes:
        try:
            dataset = IndexedDataset(prefix)
            count = len(dataset)
            if count and len(dataset[count - 1]) != int(dataset.sequence_lengths[count - 1]):
                raise ValueError("last sequence does not read back at its length")
            del dataset
        except Exception as error:  # megatron-core raises bare asserts and numpy errors
            problems.append(f"{prefix}: {type(error).__name__}: {error}")
    if problems:
        return Check("megatron-core", "fail", "megatron-core's IndexedDataset cannot read "
                     + "; ".join(problems))
    return Check("megatron-core", "ok", f"IndexedDataset reads all {len(prefixes)} datasets")


# ----------------------------------------------------------------------------- tokenizer

def check_tokenizer(plan: LaunchPlan) -> Check:
    files, train = plan.tokenizer, plan.train
    if not os.path.isfile(files.file):
        return Check("tokenizer", "fail", f"tokenizer file {files.file} is missing (lemur-data "
                     "launch copies the run's tokenizer there)")
    config = TokenizerConfig(file=files.file) if files.type == "HuggingFaceTokenizer" \
        else TokenizerConfig(sentencepiece=files.file)
    try:
        vocab = load_tokenizer(config).vocab_size
    except Exception as error:  # sentencepiece / tokenizers raise their own types
        return Check("tokenizer", "fail", f"cannot load {files.file}: {error}")
    preset = PRESETS[train.preset]
    tp = train.tensor_parallel
    given = plan.flags.get("--padded-vocab-size")
    if given is not None:
        padded = _int(given)
    else:
        multiple = _int(plan.flags.get("--make-vocab-size-divisible-by", 128)) * tp
        padded = math.ceil(vocab / multiple) * multiple
    if preset.vocab_size is not None and vocab != preset.vocab_size:
        return Check("tokenizer", "fail", f"vocab size mismatch: the tokenizer has {vocab} "
                     f"tokens, model {preset.name} has {preset.vocab_size} (padded vocab "
                     f"{padded}); tokenize with the model's own tokenizer")
    if padded < vocab or padded % tp:
        return Check("tokenizer", "fail", f"vocab size mismatch: padded vocab {padded} must "
                     f"hold the tokenizer's {vocab} tokens and split over TP = {tp}")
    return Check("tokenizer", "ok", f"{files.type} {files.model}: {vocab} tokens, "
                 f"padded vocab {padded}")


# ----------------------------------------------------------------------------- Megatron-LM

def check_megatron_lm(env: Mapping[str, str]) -> Check:
    root = env.get("MEGATRON_LM")
    if not root:
        return Check("megatron-lm", "fail", "MEGATRON_LM is not set: export MEGATRON_LM=<a "
                     "checkout of https://github.com/NVIDIA/Megatron-LM>")
    if not os.path.isdir(root):
        return Check("megatron-lm", "fail", f"MEGATRON_LM={root} is not a folder")
    if not os.path.isfile(os.path.join(root, "pretrain_gpt.py")):
        return Check("megatron-lm", "fail", f"MEGATRON_LM={root} has no pretrain_gpt.py: not a "
                     "Megatron-LM checkout")
    return Check("megatron-lm", "ok", f"{root}/pretrain_gpt.py")


def bundled_flags() -> dict[str, str]:
    """flag -> `switch` | `value`, as Megatron-LM's parser declares them (megatron_flags.txt)."""
    text = resources.files("lemur_data.pipeline.launch").joinpath("megatron_flags.txt").read_text()
    return dict(line.split() for line in text.splitlines() if line and not line.startswith("#"))


# Run inside a checkout: prints its parser's flags as JSON (the same data as
# megatron_flags.txt). Imports torch and megatron, hence a subprocess.
PARSER_SNIPPET = """
import argparse, json, sys, typing
typing.override = getattr(typing, "override", lambda f: f)  # main needs Python 3.12's
sys.argv = ["pretrain_gpt.py"]
from megatron.training.arguments import add_megatron_arguments
parser = add_megatron_arguments(argparse.ArgumentParser(allow_abbrev=False,
                                                        conflict_handler="resolve"))
print(json.dumps({o: "switch" if a.nargs == 0 else "value" for a in parser._actions
                  for o in a.option_strings if o.startswith("--")}))
"""


def checkout_flags(root: str, python: str = sys.executable,
                   timeout: float = 300) -> dict[str, str]:
    """The flags of the checkout's own parser; raises RuntimeError when it does not import."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    try:
        done = subprocess.run([python, "-c", PARSER_SNIPPET], cwd=root, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"its parser did not load within {timeout:.0f} s") from None
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(last)
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_flags(plan: LaunchPlan, megatron_lm: str | None) -> Check:
    known, source = bundled_flags(), "the bundled flag list (Megatron-LM core_v0.16.1 and main)"
    note = ""
    if megatron_lm:
        try:
            known, source = checkout_flags(megatron_lm), f"the parser of {megatron_lm}"
        except RuntimeError as error:
            note = f" (could not load the parser of {megatron_lm}: {error})"
    problems = []
    for flag, value in plan.flags.items():
        kind = known.get(flag)
        if kind is None:
            problems.append(f"{flag} is not a Megatron-LM flag")
        elif kind == "switch" and value is not True:
            problems.append(f"{flag} is a switch: give it `true` (or null to remove it), "
                            f"not {value!r}")
        elif kind == "value" and value is True:
            problems.append(f"{flag} needs a value")
    if problems:
        return Check("flags", "fail", f"checked against {source}{note}: " + "; ".join(problems))
    return Check("flags", "ok", f"all {len(plan.flags)} flags accepted by {source}{note}")


# ----------------------------------------------------------------------------- GPUs

def gpu_count() -> tuple[int, str]:
    """GPUs on this node and how they were found (torch first, then nvidia-smi)."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.device_count(), "torch.cuda"
    except ImportError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return 0, "nvidia-smi failed"
        gpus = [line for line in done.stdout.splitlines() if line.startswith("GPU ")]
        return len(gpus), "nvidia-smi"
    return 0, "torch.cuda.is_available() is False and there is no nvidia-smi"


def check_gpus(per_node: int, count: tuple[int, str] | None = None) -> Check:
    gpus, how = count if count is not None else gpu_count()
    if gpus == 0:
        return Check("gpus", "fail", f"no GPU on this node ({how}): training needs {per_node} "
                     "per node; use --dry-run to render the command only")
    if gpus < per_node:
        return Check("gpus", "fail", f"this node has {gpus} GPU(s) ({how}), train.gpus_per_node "
                     f"is {per_node}")
    return Check("gpus", "ok", f"{gpus} GPU(s) ({how})")
