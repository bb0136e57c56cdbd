"""Mix and pack: hit the target token ratio, write Megatron indexed datasets.

Phases (all deterministic; none depends on the number of workers):

- `split` (per shard): each document goes to its mixture component (the most
  specific weight key that matches: `source:lang`, `source`, `kind:lang`,
  `kind`) and gets a hash bucket from (seed, document id). Writes the
  component's tokens of the shard back to back plus a histogram of tokens per
  bucket.
- `plan` (one task): per component, target = total_tokens * weight / sum of
  weights; epochs = target / available. Every document is used floor(epochs)
  whole times; the fractional epoch takes the documents of the lowest hash
  buckets, and from the bucket where the target falls, documents in hash
  order, the last one shortened (its EOS kept), so each component gets its
  target to the token.
- `pack`: `separate` writes each component as a few large shards
  (`<component>_00000.bin/.idx`, ...) epoch by epoch, shards in id order;
  `pre_blended` writes one dataset (`blend_00000...`) where each component's
  documents are shuffled (seeded) and spread evenly by token mass, so every
  window of the stream holds the target mix.
- `index`: `data_args.txt` (weight prefix pairs for `--data-args-path`;
  each shard weighs its share of tokens, as the data are already mixed) and
  `summary.json`.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import xxhash
from fsspec.implementations.local import LocalFileSystem
from pydantic import ByteSize, Field, PositiveFloat, PositiveInt

from lemur_data.stages import storage
from lemur_data.stages.base import (
    DocumentStage,
    GlobalContext,
    GlobalStage,
    Phase,
    ShardContext,
    StageParams,
    StageResult,
    Task,
)
from lemur_data.stages.megatron_writer import Packer, ShardedWriter
from lemur_data.stages.tokenize import TOKEN_IDS

KINDS = ("code", "text")


class MixParams(StageParams):
    weights: dict[str, PositiveFloat] | None = None
    """Component -> weight (kind, source, `kind:lang`, `source:lang`); none: each kind once."""
    total_tokens: PositiveFloat | None = None
    """Token budget of the mix; none: every document once (weights must be none too)."""
    max_shard_bytes: ByteSize = ByteSize(8 * 10**9)
    """Most bytes in one `.bin`; a component rolls over to its next shard before that."""
    blend: Literal["separate", "pre_blended"] = "separate"
    """Shards per component, or one pre-shuffled dataset holding the target mix everywhere."""
    seq_length: PositiveInt | None = None
    """Pack into sequences of seq_length + 1 tokens (documents run across them)."""
    hash_bits: int = Field(16, ge=4, le=24)
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
    for row, (source, kind, lang) in enumerate(zip(*columns, strict=True)):
        for key in (f"{source}:{lang}", source, f"{kind}:{lang}", kind):
            if key in index:
                out[row] = index[key]
                break
    return out


# ----------------------------------------------------------------------------- split

@dataclass(frozen=True)
class SplitShard:
    shard_path: str
    out_dir: str
    components: list[Component]
    seed: int
    bits: int

    def __call__(self) -> dict[str, Any]:
        table = storage.read_parquet(self.shard_path, ["id", "source", "kind", "lang", TOKEN_IDS])
        ids = table.column(TOKEN_IDS).combine_chunks()
        dtype = np.dtype(ids.type.value_type.to_pandas_dtype())
        which = assign(table, [c.key for c in self.components])
        hashes = hashes_of(table.column("id").to_pylist(), self.seed)
        buckets = bucket_of(hashes, self.bits)
        lengths = ids.value_lengths().to_numpy(zero_copy_only=False).astype(np.int64)
        rows: dict[str, list[Any]] = {"component": [], "bucket": [], "tokens": [], "docs": []}
        tokens: dict[str, int] = {}
        for number, component in enumerate(self.components):
            mask = which == number
            flat = ids.filter(pa.array(mask)).flatten().to_numpy(zero_copy_only=False)
            storage.write_bytes_atomic(self._path(component, ".bin"),
                                       flat.astype(dtype, copy=False).tobytes())
            storage.write_parquet_atomic(self._path(component, ".parquet"), pa.table({
                "tokens": lengths[mask], "hash": hashes[mask]}))
            per_bucket = np.bincount(buckets[mask], weights=lengths[mask],
                                     minlength=2**self.bits).astype(np.int64)
            docs = np.bincount(buckets[mask], minlength=2**self.bits)
            used = np.flatnonzero(docs)
            rows["component"] += [component.key] * len(used)
            rows["bucket"] += used.tolist()
            rows["tokens"] += per_bucket[used].tolist()
            rows["docs"] += docs[used].tolist()
            tokens[component.key] = int(lengths[mask].sum())
        storage.write_parquet_atomic(storage.join(self.out_dir, "histogram.parquet"), pa.table(
            rows, schema=pa.schema([("component", pa.string()), ("bucket", pa.int32()),
                                    ("tokens", pa.int64()), ("docs", pa.int64())])))
        storage.write_json_atomic(storage.join(self.out_dir, "info.json"), {
            "dtype": dtype.name, "docs": table.num_rows,
            "unassigned_docs": int((which < 0).sum()),
            "unassigned_tokens": int(lengths[which < 0].sum())})
        return {"docs": table.num_rows, "tokens": tokens, "dtype": dtype.name}

    def _path(self, component: Component, suffix: str) -> str:
        return storage.join(self.out_dir, component.slug + suffix)


# ----------------------------------------------------------------------------- plan

@dataclass(frozen=True)
class PlanMix:
    split_dirs: list[str]
    out_path: str
    components: list[Component]
    total_tokens: float | None
    bits: int

    def __call__(self) -> dict[str, Any]:
        count = len(self.components)
        tokens = np.zeros((count, 2**self.bits), np.int64)
        docs = np.zeros((count, 2**self.bits), np.int64)
        number = {c.key: i for i, c in enumerate(self.components)}
        unassigned = {"docs": 0, "tokens": 0}
        dtypes = set()
        for folder in self.split_dirs:
            hist = storage.read_parquet(storage.join(folder, "histogram.parquet"))
            rows = np.array([number[k] for k in hist.column("component").to_pylist()], np.int64)
            cols = hist.column("bucket").to_numpy().astype(np.int64)
            np.add.at(tokens, (rows, cols), hist.column("tokens").to_numpy())
            np.add.at(docs, (rows, cols), hist.column("docs").to_numpy())
            info = storage.read_json(storage.join(folder, "info.json"))
            unassigned["docs"] += info["unassigned_docs"]
            unassigned["tokens"] += info["unassigned_tokens"]
            dtypes.add(info["dtype"])
        if len(dtypes) > 1:
            raise ValueError(f"shards hold token ids of different types {sorted(dtypes)}")
        plan = plan_components(self.components, tokens, docs, self.total_tokens)
        result = {"total_tokens": self.total_tokens, "hash_buckets": 2**self.bits,
                  "dtype": dtypes.pop() if dtypes else "uint16",
                  "unassigned": unassigned, "components": plan, **realized(plan)}
        storage.write_json_atomic(self.out_path, result)
        return {k: v for k, v in result.items() if k != "components"}


def plan_components(components: list[Component], tokens: np.ndarray, docs: np.ndarray,
                    total_tokens: float | None) -> list[dict[str, Any]]:
    """Whole epochs, then where the fractional epoch's cut falls, per component.

    The fractional epoch takes the documents of the hash buckets below
    `cut_bucket`, then `cut_tokens` more from the cut bucket (whole documents in
    hash order, the last one shortened), so every component gets its target
    to the token.
    """
    weight_sum = sum(c.weight for c in components if c.weight is not None)
    plan = []
    for number, component in enumerate(components):
        available = int(tokens[number].sum())
        if component.weight is None or total_tokens is None:
            target = available
        else:
            target = round(total_tokens * component.weight / weight_sum)
        if available == 0 and target > 0:
            raise ValueError(f"mixture component {component.key!r} has weight "
                             f"{component.weight} but no tokens: no document matches it")
        full, rest = divmod(target, available) if available else (0, 0)
        cumulative = np.concatenate([[0], np.cumsum(tokens[number])])
        cut = int(np.searchsorted(cumulative, rest, side="right")) - 1
        plan.append({
            "key": component.key, "slug": component.slug, "weight": component.weight,
            "available_tokens": available, "available_docs": int(docs[number].sum()),
            "target_tokens": target, "epochs": round(target / available, 6) if available else 0.0,
            "full_epochs": full, "passes": full + (1 if rest else 0),
            "cut_bucket": cut, "cut_tokens": int(rest - cumulative[cut]),
            "used_tokens": target,
        })
    return plan


def realized(plan: list[dict[str, Any]]) -> dict[str, Any]:
    """Realized vs target shares of the mix (by weight), and the worst relative error."""
    used = sum(p["used_tokens"] for p in plan)
    weights = sum(p["weight"] or p["available_tokens"] for p in plan)
    worst = 0.0
    for p in plan:
        p["target_share"] = round((p["weight"] or p["available_tokens"]) / weights, 8) \
            if weights else 0.0
        p["realized_share"] = round(p["used_tokens"] / used, 8) if used else 0.0
        if p["target_share"]:
            error = p["realized_share"] / p["target_share"] - 1
            p["share_error"] = round(error, 8)
            worst = max(worst, abs(error))
    return {"used_tokens": used, "max_share_error": round(worst, 8)}


# ----------------------------------------------------------------------------- selection

def hashes_of(ids: list[str], seed: int) -> np.ndarray:
    """A 64-bit hash per document id: fixed by the seed, not by the document's shard."""
    return np.fromiter((xxhash.xxh3_64_intdigest(f"{seed}\x00{i}".encode()) for i in ids),
                       np.uint64, count=len(ids))


def bucket_of(hashes: np.ndarray, bits: int) -> np.ndarray:
    return (hashes >> np.uint64(64 - bits)).astype(np.int64)


def fraction_takes(entry: dict[str, Any], docs: list[tuple[np.ndarray, np.ndarray]],
                   bits: int) -> list[np.ndarray]:
    """Tokens each document gives the fractional epoch (0: none), per shard.

    Documents below the cut bucket give all their tokens; those in the cut
    bucket, in (hash, shard, position) order, give whole until `cut_tokens`
    is reached, and the next one its first tokens and its last (EOS).
    """
    takes, hashes_at, rows = [], [], []
    for shard, (lengths, hashes) in enumerate(docs):
        buckets = bucket_of(hashes, bits)
        takes.append(np.where(buckets < entry["cut_bucket"], lengths, 0))
        at = np.flatnonzero(buckets == entry["cut_bucket"])
        hashes_at.append(hashes[at])
        rows.append(np.stack([np.full(len(at), shard), at, lengths[at]], axis=1))
    if not entry["cut_tokens"]:
        return takes
    keys = np.concatenate(hashes_at)
    rows = np.concatenate(rows).astype(np.int64)
    rows = rows[np.lexsort((rows[:, 1], rows[:, 0], keys))]
    cumulative = np.cumsum(rows[:, 2])
    whole = int(np.searchsorted(cumulative, entry["cut_tokens"], side="right"))
    for shard, position, length in rows[:whole]:
        takes[shard][position] = length
    left = entry["cut_tokens"] - (int(cumulative[whole - 1]) if whole else 0)
    if left:
        shard, position, _ = rows[whole]
        takes[shard][position] = left
    return takes


def pass_takes(entry: dict[str, Any], docs: list[tuple[np.ndarray, np.ndarray]],
               bits: int) -> list[list[np.ndarray]]:
    """Per pass (epoch), per shard, the tokens each document gives."""
    passes = [[lengths for lengths, _ in docs] for _ in range(entry["full_epochs"])]
    if entry["passes"] > entry["full_epochs"]:
        passes.append(fraction_takes(entry, docs, bits))
    return passes


def gather(tokens: np.ndarray, lengths: np.ndarray,
           take: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tokens of the documents with take > 0; a shortened one keeps its last token."""
    keep = take > 0
    if keep.all() and (take == lengths).all():
        return np.asarray(tokens), lengths
    mask = np.repeat(keep, lengths)
    ends = np.cumsum(lengths)
    for doc in np.flatnonzero(keep & (take < lengths)):
        mask[ends[doc] - lengths[doc] + take[doc] - 1:ends[doc] - 1] = False
    return np.asarray(tokens)[mask], take[keep]


# ----------------------------------------------------------------------------- pack

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
class PackComponent:
    """Writes one component, epoch by epoch, shards in id order, into a few large shards."""

    component: Component
    split_dirs: list[str]
    plan_path: str
    out_dir: str
    outputs_path: str
    max_shard_bytes: int
    seq_length: int | None
    bits: int

    def __call__(self) -> dict[str, Any]:
        plan = storage.read_json(self.plan_path)
        entry = next(p for p in plan["components"] if p["key"] == self.component.key)
        dtype = np.dtype(plan["dtype"])
        writer = ShardedWriter(self.out_dir, self.component.slug, dtype, self.max_shard_bytes)
        packer = Packer(self.seq_length + 1) if self.seq_length else None
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
class BlendAll:
    """One dataset: each component shuffled, then spread evenly by token mass."""

    components: list[Component]
    split_dirs: list[str]
    plan_path: str
    out_dir: str
    outputs_path: str
    max_shard_bytes: int
    seq_length: int | None
    seed: int
    bits: int
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
        writer = ShardedWriter(self.out_dir, "blend", dtype, self.max_shard_bytes)
        packer = Packer(self.seq_length + 1) if self.seq_length else None
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


# ----------------------------------------------------------------------------- index

@dataclass(frozen=True)
class WriteIndex:
    outputs: list[str]
    out_dir: str
    plan_path: str
    prefix_dir: str  # out_dir as the trainer will see it (absolute, made on the driver)

    def __call__(self) -> dict[str, Any]:
        records = [storage.read_json(path) for path in self.outputs]
        shards = [dict(s, component=r["component"]) for r in records for s in r["shards"]]
        total = sum(s["tokens"] for s in shards)
        lines = [f"{s['tokens'] / max(total, 1):.12f} "
                 f"{storage.join(self.prefix_dir, s['prefix'].rsplit('/', 1)[-1])}" for s in shards
                 if s["tokens"]]
        storage.write_bytes_atomic(storage.join(self.out_dir, "data_args.txt"),
                                   ("\n".join(lines) + "\n").encode())
        plan = storage.read_json(self.plan_path)
        summary = {"dtype": plan["dtype"], "tokens": total, "data_args": "data_args.txt",
                   "docs": {r["component"]: r["docs"] for r in records},
                   "shards": [{**s, "prefix": s["prefix"].rsplit("/", 1)[-1]} for s in shards]}
        storage.write_json_atomic(storage.join(self.out_dir, "summary.json"), summary)
        return {"shards": len(shards), "tokens": total}


def _absolute(prefix: str) -> str:
    return prefix if "://" in prefix else os.path.abspath(prefix)


# ----------------------------------------------------------------------------- stage

class _NoApplier(DocumentStage):
    name = "mix"
    Params = MixParams

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        return StageResult.keep_all(docs)


class MixAndPack(GlobalStage):
    """The last step of a run: reads the tokenized shards, writes `<run>/megatron/`."""

    name = "mix"
    Params = MixParams

    def __init__(self, params: MixParams, out_dir: str) -> None:
        super().__init__(params)
        self.out_dir = out_dir

    def phases(self, ctx: GlobalContext) -> list[Phase]:
        p: MixParams = self.params  # type: ignore[assignment]
        components = components_of(p)
        shards = sorted(ctx.input_shards)
        split_dirs = [storage.join(ctx.work_dir, "split", s) for s in shards]
        plan_path = storage.join(ctx.work_dir, "plan.json")
        outputs = storage.join(ctx.work_dir, "outputs")
        split = Phase("split", [
            Task(s, SplitShard(ctx.input_shards[s], d, components, ctx.seed, p.hash_bits))
            for s, d in zip(shards, split_dirs, strict=True)])
        planning = Phase("plan", [Task("plan", PlanMix(split_dirs, plan_path, components,
                                                       p.total_tokens, p.hash_bits))])
        if p.blend == "separate":
            pack = Phase("pack", [
                Task(c.slug, PackComponent(c, split_dirs, plan_path, self.out_dir,
                                           storage.join(outputs, c.slug + ".json"),
                                           int(p.max_shard_bytes), p.seq_length, p.hash_bits))
                for c in components])
            written = [storage.join(outputs, c.slug + ".json") for c in components]
        else:
            pack = Phase("pack", [Task("blend", BlendAll(
                components, split_dirs, plan_path, self.out_dir,
                storage.join(outputs, "blend.json"), int(p.max_shard_bytes), p.seq_length,
                ctx.seed, p.hash_bits, p.blend_batch_docs))])
            written = [storage.join(outputs, "blend.json")]
        index = Phase("index", [Task("index", WriteIndex(written, self.out_dir, plan_path,
                                                           _absolute(self.out_dir)))])
        return [split, planning, pack, index]

    def applier(self, ctx: GlobalContext) -> DocumentStage:
        return _NoApplier(self.params)

    def summary(self, ctx: GlobalContext) -> dict[str, Any]:
        plan = storage.read_json(storage.join(ctx.work_dir, "plan.json"))
        megatron = storage.read_json(storage.join(self.out_dir, "summary.json"))
        for entry in plan["components"]:
            entry["realized_epochs"] = (round(entry["used_tokens"] / entry["available_tokens"], 6)
                                        if entry["available_tokens"] else 0.0)
            entry["used_docs"] = megatron["docs"].get(entry["key"])
        return {"mixture": plan, "megatron": megatron}

