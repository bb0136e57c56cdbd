"""Phase `pack`: writes the Megatron shards from the split tokens and the plan.

`separate`: one PackComponent task per component (`<slug>_00000.bin/.idx`,
...); `pre_blended`: one BlendAll task writing `blend_00000...`. Each task
records its shards in `outputs/<name>.json` for the index phase.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
from fsspec.implementations.local import LocalFileSystem

from .. import storage
from .indexed_dataset import Packer, ShardedWriter
from .params import Component
from .select import gather, pass_takes


@dataclass(frozen=True)
class ShardTokens:
    """One shard's tokens of one component, loaded lazily."""

    bin_path: str
    index_path: str

    def index(self) -> tuple[np.ndarray, np.ndarray]:
        table = storage.read_parquet(self.index_path)
        return (table.column("tokens").to_numpy().astype(np.int64),
                table.column("hash").to_numpy().astype(np.uint64))

    def tokens(self, dtype: np.dtype) -> np.ndarray:
        fs, path = storage.filesystem(self.bin_path)
        if isinstance(fs, LocalFileSystem):
            # mapped, not read: pre-blending reads documents of many shards at random
            return (np.memmap(path, dtype=dtype, mode="r") if fs.size(path)
                    else np.zeros(0, dtype))
        return np.frombuffer(fs.cat_file(path), dtype=dtype)


def _shard_tokens(split_dirs: list[str], component: Component) -> list[ShardTokens]:
    return [ShardTokens(storage.join(d, component.slug + ".bin"),
                        storage.join(d, component.slug + ".parquet")) for d in split_dirs]


@dataclass(frozen=True)
class _PackTask:
    """What both pack tasks read (the split tokens, the plan) and how they write."""

    split_dirs: list[str]
    plan_path: str
    out_dir: str
    outputs_path: str
    max_shard_bytes: int
    seq_length: int | None
    bits: int

    def _writers(self, name: str, dtype: np.dtype) -> tuple[ShardedWriter, Packer | None]:
        """The shard writer, and the packer in front of it when sequences are packed."""
        return (ShardedWriter(self.out_dir, name, dtype, self.max_shard_bytes),
                Packer(self.seq_length + 1) if self.seq_length else None)


@dataclass(frozen=True)
class PackComponent(_PackTask):
    """Writes one component, epoch by epoch, shards in id order, into a few large shards."""

    component: Component

    def __call__(self) -> dict[str, Any]:
        plan = storage.read_json(self.plan_path)
        entry = next(p for p in plan["components"] if p["key"] == self.component.key)
        dtype = np.dtype(plan["dtype"])
        writer, packer = self._writers(self.component.slug, dtype)
        sources = _shard_tokens(self.split_dirs, self.component)
        docs = [source.index() for source in sources]
        used_docs = 0
        for takes in pass_takes(entry, docs, self.bits):
            for source, (lengths, _), take in zip(sources, docs, takes, strict=True):
                if not take.any():
                    continue
                tokens, kept = gather(source.tokens(dtype), lengths, take)
                used_docs += len(kept)
                _emit(writer, packer, tokens, kept)
        return _finish(writer, packer, self.component.key, entry["used_tokens"], used_docs,
                       self.outputs_path)


def _emit(writer: ShardedWriter, packer: Packer | None, tokens: np.ndarray,
          lengths: np.ndarray) -> None:
    if packer is not None:
        tokens, lengths = packer.add(tokens, lengths)
    if len(lengths):
        writer.add(tokens, lengths)


def _finish(writer: ShardedWriter, packer: Packer | None, name: str, planned: int,
            used_docs: int, outputs_path: str) -> dict[str, Any]:
    if packer is not None:
        writer.add(*packer.flush())
    shards = [s.as_dict() for s in writer.close()]
    used = sum(s["tokens"] for s in shards)
    if used != planned:
        raise RuntimeError(f"{name}: wrote {used} tokens, planned {planned}")
    record = {"component": name, "shards": shards, "tokens": used, "docs": used_docs}
    storage.write_json_atomic(outputs_path, record)
    return {"component": name, "shards": len(shards), "tokens": used, "docs": used_docs}


@dataclass(frozen=True)
class BlendAll(_PackTask):
    """One dataset: each component shuffled, then spread evenly by token mass."""

    components: list[Component]
    seed: int
    batch_docs: int

    def __call__(self) -> dict[str, Any]:
        plan = storage.read_json(self.plan_path)
        dtype = np.dtype(plan["dtype"])
        sources = [_shard_tokens(self.split_dirs, c) for c in self.components]
        places, refs = [], []
        for number, component in enumerate(self.components):
            entry = next(p for p in plan["components"] if p["key"] == component.key)
            ref = self._stream(number, entry, sources[number])
            # A document's place is the middle of its token span within its component: merged
            # by place, every window of the stream holds each component at its share.
            total = max(int(ref[:, 4].sum()), 1)
            places.append((np.cumsum(ref[:, 4]) - ref[:, 4] / 2) / total)
            refs.append(ref)
        ref = np.concatenate(refs) if refs else np.zeros((0, 5), np.int64)
        order = np.argsort(np.concatenate(places) if places else np.zeros(0), kind="stable")
        writer, packer = self._writers("blend", dtype)
        load = functools.lru_cache(maxsize=64)(lambda c, s: sources[c][s].tokens(dtype))
        for start in range(0, len(order), self.batch_docs):
            batch = ref[order[start:start + self.batch_docs]]
            pieces = []
            for component, shard, offset, length, take in batch.tolist():
                tokens = load(component, shard)
                pieces.append(tokens[offset:offset + take - 1])
                pieces.append(tokens[offset + length - 1:offset + length])
            tokens = np.concatenate(pieces) if pieces else np.zeros(0, dtype)
            _emit(writer, packer, tokens, batch[:, 4])
        return _finish(writer, packer, "blend", plan["used_tokens"], len(ref),
                       self.outputs_path)

    def _stream(self, number: int, entry: dict[str, Any],
                sources: list[ShardTokens]) -> np.ndarray:
        """Rows (component, shard, offset, length, take) of the component's documents in the
        order they are used: epoch by epoch, each epoch shuffled by the seed."""
        docs = [source.index() for source in sources]
        rng = np.random.default_rng([self.seed, number])
        epochs = []
        for takes in pass_takes(entry, docs, self.bits):
            rows = []
            for shard, ((lengths, _), take) in enumerate(zip(docs, takes, strict=True)):
                keep = np.flatnonzero(take > 0)
                offsets = np.cumsum(lengths) - lengths
                rows.append(np.stack([np.full(len(keep), number), np.full(len(keep), shard),
                                      offsets[keep], lengths[keep], take[keep]], axis=1))
            epoch = np.concatenate(rows) if rows else np.zeros((0, 5), np.int64)
            epochs.append(epoch[rng.permutation(len(epoch))])
        return np.concatenate(epochs).astype(np.int64) if epochs else np.zeros((0, 5), np.int64)
