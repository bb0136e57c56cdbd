"""Where a Megatron launch runs: node count, this node's rank, the master's address.

Taken from arguments, else the environment (torchrun-style names, then Slurm's), else
the manifest's `train.nnodes` and defaults; each value records where it came from, so
`lemur-data launch` can say why it chose a layout.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plan import TrainConfig

DEFAULT_MASTER_PORT = 29500


@dataclass(frozen=True)
class Distributed:
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = "localhost"
    master_port: int = DEFAULT_MASTER_PORT
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    """Where each value came from (argument, env NAME, manifest, default)."""


def resolve_distributed(train: TrainConfig, env: Mapping[str, str] | None = None,
                        nnodes: int | None = None, node_rank: int | None = None,
                        master_addr: str | None = None, master_port: int | None = None,
                        ) -> Distributed:
    """Node layout from arguments, else the environment (torchrun-style names, then Slurm's),
    else the manifest and defaults."""
    env = os.environ if env is None else env
    sources: dict[str, str] = {}

    def pick(name: str, given: Any, keys: list[str], default: Any, cast: Any) -> Any:
        if given is not None:
            sources[name] = "argument"
            return given
        for key in keys:
            value = env.get(key)
            if value:
                sources[name] = f"env {key}"
                return cast(value)
        sources[name] = "manifest" if name == "nnodes" else "default"
        return default

    nodes = pick("nnodes", nnodes, ["NNODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"],
                 train.nnodes, int)
    rank = pick("node_rank", node_rank, ["NODE_RANK", "SLURM_NODEID"], 0, int)
    addr = pick("master_addr", master_addr, ["MASTER_ADDR"], None, str)
    if addr is None:
        nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
        if nodelist:
            addr, sources["master_addr"] = first_slurm_host(nodelist), "env SLURM_JOB_NODELIST"
        else:
            addr = "localhost"
    port = pick("master_port", master_port, ["MASTER_PORT"], DEFAULT_MASTER_PORT, int)
    if not 1 <= port <= 65535:
        raise ValueError(f"master port {port} ({sources['master_port']}) is not a TCP port: "
                         "give one in 1..65535")
    if nodes < 1:
        raise ValueError(f"{nodes} nodes ({sources['nnodes']}): give at least 1")
    if not addr.strip():
        raise ValueError(f"master address is empty ({sources['master_addr']})")
    if not 0 <= rank < nodes:
        raise ValueError(f"node rank {rank} ({sources['node_rank']}) is not in 0..{nodes - 1} "
                         f"({nodes} nodes, {sources['nnodes']})")
    return Distributed(nodes, rank, addr, port, sources)


def first_slurm_host(nodelist: str) -> str:
    """First host of a Slurm node list: `gpu[003-010,012],login1` -> `gpu003`."""
    depth, end = 0, len(nodelist)
    for i, char in enumerate(nodelist):
        depth += char == "["
        depth -= char == "]"
        if char == "," and depth == 0:
            end = i
            break
    first = nodelist[:end].strip()
    return re.sub(r"\[([^\]]*)\]", lambda m: re.split(r"[,-]", m.group(1))[0], first)
