"""What the output shards hold: tokens, licenses, length histograms, syntax checks.

stats.json's stage counts come from the task markers; these figures need the
documents themselves, so they are read from the final shards, only the small
columns (and the text's lengths). Shards are read in name order and the bins
are fixed, so the result is the same on every run of the same manifest.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lemur_data.stages import storage

# Log-spaced bin edges, 4 per decade: 1 byte (or token) to 10^9.
EDGES = [round(10 ** (i / 4)) for i in range(0, 37)]
LENGTH_SHARDS = 64
"""Most shards whose text is read for the length histogram (spread evenly by name)."""
_META = ("source", "kind", "lang", "license")
_SYNTAX = ("syntax_checked", "syntax_clean")


def _histogram(values: np.ndarray) -> np.ndarray:
    counts, _ = np.histogram(np.clip(values, 1, EDGES[-1] - 1), bins=EDGES)
    return counts.astype(np.int64)


def _spread(items: list[str], most: int) -> list[str]:
    """At most `most` items evenly spread over the list (all of them if it is short)."""
    if len(items) <= most:
        return items
    step = len(items) / most
    return [items[int(i * step)] for i in range(most)]


def profile_output(paths: list[str], length_shards: int = LENGTH_SHARDS) -> dict[str, Any]:
    """Figures of the documents in the shards at `paths`."""
    paths = sorted(paths)
    licenses: Counter[str] = Counter()
    docs: dict[str, Counter[str]] = defaultdict(Counter)
    tokens: dict[str, Counter[str]] = {"source": Counter(), "lang": Counter(),
                                       "kind": Counter()}
    syntax: dict[str, Counter[str]] = defaultdict(Counter)
    bytes_hist: dict[str, np.ndarray] = {}
    token_hist: dict[str, np.ndarray] = {}
    has_tokens = False
    read_text = set(_spread(paths, length_shards))
    for path in paths:
        fs, local = storage.filesystem(path)
        with fs.open(local, "rb") as handle:
            parquet = pq.ParquetFile(handle)
            names = set(parquet.schema_arrow.names)
            wanted = [c for c in (*_META, "tokens", *_SYNTAX) if c in names]
            meta = parquet.read(columns=wanted)
            kinds = np.array(meta.column("kind").to_pylist(), dtype=object)
            licenses.update(x or "unknown" for x in meta.column("license").to_pylist())
            for kind, lang in zip(kinds.tolist(), meta.column("lang").to_pylist(), strict=True):
                docs[kind][lang or "unknown"] += 1
            if "tokens" in names:
                has_tokens = True
                _count_tokens(meta, tokens, token_hist, kinds)
            if "syntax_checked" in names:
                for lang, checked, clean in zip(meta.column("lang").to_pylist(),
                                                meta.column("syntax_checked").to_pylist(),
                                                meta.column("syntax_clean").to_pylist(),
                                                strict=True):
                    if checked:
                        syntax[lang or "unknown"]["checked"] += 1
                        syntax[lang or "unknown"]["clean"] += int(bool(clean))
            if path in read_text:
                lengths = np.concatenate([
                    pc.binary_length(batch.column(0)).to_numpy(zero_copy_only=False)
                    for batch in parquet.iter_batches(columns=["text"], batch_size=8192)
                ] or [np.zeros(0, np.int64)])
                _add_histograms(bytes_hist, lengths, kinds)
    out: dict[str, Any] = {
        "shards": len(paths),
        "by_license": dict(sorted(licenses.items(), key=lambda kv: (-kv[1], kv[0]))),
        "docs_by_kind_lang": {k: dict(sorted(c.items())) for k, c in sorted(docs.items())},
        "length_histogram": {"unit": "bytes", "edges": EDGES,
                             "shards_read": len(read_text),
                             "counts": {k: v.tolist() for k, v in sorted(bytes_hist.items())}},
    }
    if has_tokens:
        out["tokens"] = sum(tokens["kind"].values())
        for key, counter in tokens.items():
            out[f"tokens_by_{key}"] = dict(sorted(counter.items()))
        out["token_histogram"] = {"unit": "tokens", "edges": EDGES, "shards_read": len(paths),
                                  "counts": {k: v.tolist()
                                             for k, v in sorted(token_hist.items())}}
    if syntax:
        out["syntax"] = {lang: dict(sorted(c.items())) for lang, c in sorted(syntax.items())}
    return out


def _count_tokens(meta: Any, tokens: dict[str, Counter[str]],
                  token_hist: dict[str, np.ndarray], kinds: np.ndarray) -> None:
    counts = meta.column("tokens").to_numpy(zero_copy_only=False).astype(np.int64)
    for key in tokens:
        values = [v or "unknown" for v in meta.column(key).to_pylist()]
        for value, n in zip(values, counts.tolist(), strict=True):
            tokens[key][value] += n
    _add_histograms(token_hist, counts, kinds)


def _add_histograms(into: dict[str, np.ndarray], values: np.ndarray, kinds: np.ndarray) -> None:
    """Add the histogram of `values` per kind (counts only: memory stays fixed)."""
    for kind in sorted(set(kinds.tolist())):
        counts = _histogram(values[kinds == kind])
        into[kind] = into[kind] + counts if kind in into else counts
