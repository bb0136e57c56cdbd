"""Mix parameters, the mixture's components, and which component each document joins.

A document counts for the most specific weight key that matches it:
`source:lang`, `source`, `kind:lang`, then `kind`. A repository document (the
repo_context stage's, `repo_files` set) first tries the same keys with `@repo`
appended (`code@repo`, `stack-python@repo`), so a mixture can weight repository
documents against single files, as StarCoder2 mixes both. Without weights the
components are the kinds, each taken once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ByteSize, Field, PositiveFloat, PositiveInt

from ..base import StageParams

KINDS = ("code", "text")
REPO_SUFFIX = "@repo"
REPO_FILES = "repo_files"  # the repo_context stage's column: set on repository documents


class MixParams(StageParams):
    weights: dict[str, PositiveFloat] | None = None
    """Component -> weight (kind, source, `kind:lang`, `source:lang`, each optionally with
    `@repo` for repository documents); none: each kind once."""
    total_tokens: PositiveFloat | None = None
    """Token budget of the mix; none: every document once (weights must be none too)."""
    max_shard_bytes: ByteSize = ByteSize(8 * 10**9)
    """Most bytes in one `.bin`; a component rolls over to its next shard before that."""
    blend: Literal["separate", "pre_blended"] = "separate"
    """Shards per component, or one pre-shuffled dataset holding the target mix everywhere."""
    seq_length: PositiveInt | None = None
    """Pack into sequences of seq_length + 1 tokens (documents run across them)."""
    hash_bits: int = Field(default=16, ge=4, le=24)
    """Hash buckets (2**bits) for choosing the fractional epoch's documents."""
    blend_batch_docs: PositiveInt = 65536
    """Documents gathered per write when pre-blending (memory bound)."""


@dataclass(frozen=True)
class Component:
    key: str
    weight: float | None
    slug: str


def components_of(params: MixParams) -> list[Component]:
    keys = sorted(params.weights) if params.weights else list(KINDS)
    slugs = [_slug(k) for k in keys]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"mixture keys {keys} collide as file names {slugs}")
    return [Component(k, params.weights[k] if params.weights else None, s)
            for k, s in zip(keys, slugs, strict=True)]


def _slug(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", key.replace(":", "-").replace("+", "p")
                  .replace("#", "sharp"))


def assign(table: pa.Table, keys: list[str]) -> np.ndarray:
    """Component index of each document (-1: in no component), most specific key first."""
    index = {k: i for i, k in enumerate(keys)}
    out = np.full(table.num_rows, -1, np.int32)
    columns = [table.column(c).to_pylist() for c in ("source", "kind", "lang")]
    is_repo = (pc.is_valid(table.column(REPO_FILES)).to_pylist()
               if REPO_FILES in table.column_names else [False] * table.num_rows)
    for row, (source, kind, lang) in enumerate(zip(*columns, strict=True)):
        plain = (f"{source}:{lang}", source, f"{kind}:{lang}", kind)
        candidates = tuple(k + REPO_SUFFIX for k in plain) + plain if is_repo[row] else plain
        for key in candidates:
            if key in index:
                out[row] = index[key]
                break
    return out
