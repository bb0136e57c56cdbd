"""Megatron launch: render the torchrun + pretrain_gpt.py command that trains on a run's data.

The command is a pure function of the `train:` config, the run folder, the token
budget, the tokenizer files and the node layout, so the same manifest always renders
the same `launch/train.sh`. Train iterations come from the token budget:
ceil(total_tokens / (global_batch x seq_length)); the LR schedule decays over all of
them. The data flags point at the pack stage's output (`megatron/data_args.txt`, a
`--data-args-path` file of weight/prefix pairs). Checks live in `checks.py`.

`train.sh` keeps what differs per node out of the file: NODE_RANK is read when it runs
(NODE_RANK, else SLURM_NODEID, else 0), so every node can run the one script; the node
count and master address are rendered in as defaults the environment may override.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    field_validator,
)

from ...stages import storage
from ...stages.paths import LocalPath
from .nodes import Distributed
from .presets import PRESETS, Flags
from .tokenizer_files import TokenizerFiles

DATA_ARGS = "data_args.txt"


class TrainConfig(BaseModel):
    """`train:`: the Megatron-LM run that consumes the packed data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    preset: str
    """Model architecture: llama2-70b, llama2-7b, or tiny (a one-GPU smoke test)."""
    tensor_parallel: PositiveInt = 1
    pipeline_parallel: PositiveInt = 1
    global_batch: PositiveInt = 1024
    """Sequences per optimizer step, over all data-parallel ranks."""
    micro_batch: PositiveInt = 1
    seq_length: PositiveInt = 4096
    nnodes: PositiveInt = 1
    """Nodes; `lemur-data launch --nnodes`, NNODES or SLURM_NNODES override it."""
    gpus_per_node: PositiveInt = 8
    lr: PositiveFloat = 2e-5
    """Peak learning rate (continued pretraining: well below the from-scratch 1.5e-4)."""
    min_lr: NonNegativeFloat = 2e-6
    lr_decay_style: Literal["cosine", "linear", "constant", "inverse-square-root", "WSD"] = \
        "cosine"
    warmup_fraction: float = Field(0.01, ge=0.0, lt=1.0)
    """Share of the train iterations spent warming up (rounded up to whole iterations)."""
    checkpoint: LocalPath | None = None
    """Megatron-format checkpoint to start from (e.g. Llama-2-70B converted); none: from scratch."""
    init: Literal["pretrained", "finetune", "load"] = "pretrained"
    """How `checkpoint` is used. pretrained: weights only on the first start, later starts
    resume from `save` (--pretrained-checkpoint); finetune: weights only, every start
    (--load --finetune); load: resume it whole, optimizer and iteration included (--load)."""
    save: LocalPath | None = None
    """Where checkpoints go; default `<run_dir>/checkpoints`."""
    save_interval: PositiveInt = 500
    split: str = "100,0,0"
    """Megatron's train,valid,test split of every dataset; validation is off unless this
    gives it a share (and `--eval-iters` is overridden)."""
    overrides: dict[str, Any] = {}
    """Flag -> value, applied last: a value replaces, true adds a switch, null/false removes."""

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, preset: str) -> str:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; known: {sorted(PRESETS)}")
        return preset

    @field_validator("overrides")
    @classmethod
    def _flag_names(cls, overrides: dict[str, Any]) -> dict[str, Any]:
        bad = sorted(k for k in overrides if not re.fullmatch(r"--[a-z0-9][a-z0-9-]*", k))
        if bad:
            raise ValueError(f"override keys are Megatron flags like '--lr' (got {bad})")
        return overrides

    @field_validator("split")
    @classmethod
    def _split(cls, split: str) -> str:
        parts = split.split(",")
        if len(parts) != 3 or not all(re.fullmatch(r"\d+(\.\d+)?", p.strip()) for p in parts) \
                or float(parts[0]) <= 0:
            raise ValueError(f"split is 'train,valid,test' with a train share > 0 (got {split!r})")
        return split


# ----------------------------------------------------------------------------- arithmetic

def train_iters(total_tokens: float, global_batch: int, seq_length: int) -> int:
    """Optimizer steps that consume the token budget, rounded up."""
    per_step = global_batch * seq_length
    return -(-int(round(total_tokens)) // per_step)


def warmup_iters(train: TrainConfig, iters: int) -> int:
    return math.ceil(train.warmup_fraction * iters)


# ----------------------------------------------------------------------------- render

@dataclass(frozen=True)
class RunPaths:
    """Where the training run reads and writes, all under (or named by) the run folder."""

    run_dir: str
    save: str

    @property
    def data_args(self) -> str:
        return storage.join(self.run_dir, "megatron", DATA_ARGS)

    @property
    def launch_dir(self) -> str:
        return storage.join(self.run_dir, "launch")

    @property
    def script(self) -> str:
        return storage.join(self.launch_dir, "train.sh")

    @classmethod
    def of(cls, run_dir: str, train: TrainConfig) -> RunPaths:
        run_dir = run_dir if "://" in run_dir else os.path.abspath(run_dir)
        return cls(run_dir, train.save or storage.join(run_dir, "checkpoints"))


@dataclass(frozen=True)
class LaunchPlan:
    train: TrainConfig
    paths: RunPaths
    total_tokens: int
    iters: int
    flags: Flags
    """pretrain_gpt.py's flags, in order, overrides applied."""
    distributed: Distributed
    tokenizer: TokenizerFiles
    removed: tuple[str, ...] = ()
    """Flags the overrides removed."""

    @property
    def world_size(self) -> int:
        return self.distributed.nnodes * self.train.gpus_per_node

    def torchrun_args(self, nnodes: str, node_rank: str, master_addr: str,
                      master_port: str) -> list[str]:
        return ["--nproc-per-node", str(self.train.gpus_per_node), "--nnodes", nnodes,
                "--node-rank", node_rank, "--master-addr", master_addr,
                "--master-port", master_port]

    def argv(self) -> list[str]:
        """pretrain_gpt.py's arguments."""
        return flags_argv(self.flags)

    def command(self, megatron_lm: str = "$MEGATRON_LM") -> list[str]:
        """The whole command for this node, values resolved."""
        d = self.distributed
        return ["torchrun", *self.torchrun_args(str(d.nnodes), str(d.node_rank), d.master_addr,
                                                str(d.master_port)),
                f"{megatron_lm}/pretrain_gpt.py", *self.argv()]

    def script(self) -> str:
        return render_script(self)


def render(train: TrainConfig, run_dir: str, total_tokens: float, tokenizer: TokenizerFiles,
           distributed: Distributed | None = None) -> LaunchPlan:
    paths = RunPaths.of(run_dir, train)
    distributed = distributed or Distributed(nnodes=train.nnodes)
    iters = train_iters(total_tokens, train.global_batch, train.seq_length)
    flags = base_flags(train, paths, iters, tokenizer)
    removed = [k for k, v in train.overrides.items() if (v is None or v is False) and k in flags]
    flags = apply_overrides(flags, train.overrides)
    return LaunchPlan(train, paths, int(round(total_tokens)), iters, flags, distributed,
                      tokenizer, tuple(removed))


def base_flags(train: TrainConfig, paths: RunPaths, iters: int,
               tokenizer: TokenizerFiles) -> Flags:
    flags = PRESETS[train.preset].flags(train.seq_length)
    flags.update({
        "--tensor-model-parallel-size": train.tensor_parallel,
        "--pipeline-model-parallel-size": train.pipeline_parallel,
    })
    if train.tensor_parallel > 1:  # shards LayerNorm/dropout activations along the sequence
        flags["--sequence-parallel"] = True
    flags.update({
        "--use-distributed-optimizer": True,
        "--micro-batch-size": train.micro_batch,
        "--global-batch-size": train.global_batch,
        "--train-iters": iters,
        "--lr": train.lr,
        "--min-lr": train.min_lr,
        "--lr-decay-style": train.lr_decay_style,
        "--lr-decay-iters": iters,
        "--lr-warmup-iters": warmup_iters(train, iters),
        "--weight-decay": 0.1,
        "--adam-beta1": 0.9,
        "--adam-beta2": 0.95,
        "--adam-eps": 1e-5,
        "--clip-grad": 1.0,
        "--bf16": True,
        "--data-args-path": paths.data_args,
        "--split": train.split,
        "--data-cache-path": storage.join(paths.launch_dir, "data-cache"),
        "--tokenizer-type": tokenizer.type,
        "--tokenizer-model": tokenizer.model,
        "--save": paths.save,
        "--save-interval": train.save_interval,
    })
    if train.checkpoint is None:
        flags["--load"] = paths.save  # resume this run's own checkpoints after a restart
    elif train.init == "pretrained":
        flags["--load"] = paths.save
        flags["--pretrained-checkpoint"] = train.checkpoint
    elif train.init == "finetune":
        flags.update({"--load": train.checkpoint, "--finetune": True,
                      "--exit-on-missing-checkpoint": True})
    else:
        flags.update({"--load": train.checkpoint, "--exit-on-missing-checkpoint": True})
    flags.update({
        "--log-interval": 10,
        "--log-throughput": True,
        "--eval-iters": 0,
        "--tensorboard-dir": storage.join(paths.launch_dir, "tensorboard"),
    })
    return flags


def apply_overrides(flags: Flags, overrides: Mapping[str, Any]) -> Flags:
    out = dict(flags)
    for flag, value in overrides.items():
        if value is None or value is False:
            out.pop(flag, None)
        else:
            out[flag] = value  # replaces in place, or appends a new flag at the end
    return out


def format_value(value: object) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def flags_argv(flags: Flags) -> list[str]:
    argv: list[str] = []
    for flag, value in flags.items():
        argv.append(flag)
        if value is True:
            continue
        if isinstance(value, list | tuple):
            argv += [format_value(v) for v in value]
        else:
            argv.append(format_value(value))
    return argv


def render_script(plan: LaunchPlan) -> str:
    train, d = plan.train, plan.distributed
    dp = plan.world_size // (train.tensor_parallel * train.pipeline_parallel) \
        if plan.world_size % (train.tensor_parallel * train.pipeline_parallel) == 0 else "?"
    lines = [
        "#!/usr/bin/env bash",
        "# Rendered by lemur-data: Megatron-LM continued pretraining on this run's data.",
        f"# Model {train.preset}: TP {train.tensor_parallel} x PP {train.pipeline_parallel} x "
        f"DP {dp} = {d.nnodes} node(s) x {train.gpus_per_node} GPU(s).",
        f"# train_iters = ceil({plan.total_tokens} tokens / ({train.global_batch} x "
        f"{train.seq_length})) = {plan.iters}",
        "# Run it on every node from a Megatron-LM checkout (or set MEGATRON_LM);",
        "# each node's rank comes from NODE_RANK, else SLURM_NODEID, else 0.",
        "set -euo pipefail",
        'MEGATRON_LM="${MEGATRON_LM:-$PWD}"',
        'if [ ! -f "$MEGATRON_LM/pretrain_gpt.py" ]; then',
        '  echo "train.sh: no pretrain_gpt.py in $MEGATRON_LM: set MEGATRON_LM to a Megatron-LM '
        'checkout" >&2',
        "  exit 2",
        "fi",
        # Every rendered value is one shell-quoted word, assigned on its own: a default
        # inside "${X:-...}" would still run a `$(...)` it holds.
        f"DEFAULT_NNODES={shlex.quote(str(d.nnodes))}",
        f"DEFAULT_MASTER_ADDR={shlex.quote(d.master_addr)}",
        f"DEFAULT_MASTER_PORT={shlex.quote(str(d.master_port))}",
        'NNODES="${NNODES:-$DEFAULT_NNODES}"',
        'NODE_RANK="${NODE_RANK:-${SLURM_NODEID:-0}}"',
        'MASTER_ADDR="${MASTER_ADDR:-$DEFAULT_MASTER_ADDR}"',
        'MASTER_PORT="${MASTER_PORT:-$DEFAULT_MASTER_PORT}"',
        # Megatron overlaps TP communication with compute only with one hardware queue.
        'export CUDA_DEVICE_MAX_CONNECTIONS="${CUDA_DEVICE_MAX_CONNECTIONS:-1}"',
        "",
        "exec torchrun " + " ".join(plan.torchrun_args('"$NNODES"', '"$NODE_RANK"',
                                                       '"$MASTER_ADDR"', '"$MASTER_PORT"'))
        + " \\",
        '  "$MEGATRON_LM/pretrain_gpt.py" \\',
    ]
    items = list(plan.flags.items())
    for i, (flag, value) in enumerate(items):
        words = flags_argv({flag: value})
        tail = " \\" if i < len(items) - 1 else ""
        lines.append("  " + " ".join(shlex.quote(w) for w in words) + tail)
    return "\n".join(lines) + "\n"
