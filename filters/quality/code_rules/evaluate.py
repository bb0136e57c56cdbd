"""Rules applied to files: `check_one` is the plain reference for one file; `evaluate`
gives the same decisions for a batch, faster: line statistics from
filters/quality/code_metrics.py (no Python loop over characters), and the encoded-data
regexes first screen the whole column with RE2 so only the few suspicious files reach
Python's `re` (about 5x the reference; tests/bench/bench_filters.py).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..code_metrics import LineMetrics, batch_line_metrics
from .base import CodeDoc
from .content import ENCODED_PATTERNS
from .rule_set import CodeRules


def check_one(text: str, rules: CodeRules, path: str | None = None,
              known: dict[str, bool | None] | None = None,
              lang: str | None = None) -> tuple[str | None, LineMetrics]:
    """Reference path: every rule on one file, in pure Python."""
    metrics = LineMetrics.of(text)
    return rules.check(CodeDoc(text, metrics, path, lang, known or {})), metrics


def evaluate(texts: pa.Array | pa.ChunkedArray, rules: list[CodeRules],
             paths: list[str | None] | None = None,
             known: list[dict[str, bool | None]] | None = None,
             langs: list[str | None] | None = None,
             ) -> tuple[list[str | None], list[str | None], dict[str, np.ndarray]]:
    """Reasons (None = keep), details and metric columns for a batch; `rules[i]` applies
    to row i.

    Gives the same decisions as `check_one` per row, but computes line statistics
    vectorized and runs the encoded-data regexes only on RE2-selected rows.
    """
    n = len(texts)
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    strings = texts.to_pylist()
    metrics = batch_line_metrics(texts, strings)
    screens = np.zeros((len(ENCODED_PATTERNS), n), bool)
    encoded_frac = np.zeros(n, np.float64)
    if n and any(r.encoded_max_match is not None or r.encoded_max_fraction is not None
                 for r in rules):
        for k, (_, twin) in enumerate(ENCODED_PATTERNS):
            screens[k] = pc.match_substring_regex(texts, twin).to_numpy(zero_copy_only=False)
    reasons: list[str | None] = [None] * n
    details: list[str | None] = [None] * n
    for i in range(n):
        m = LineMetrics(int(metrics["chars"][i]), int(metrics["lines"][i]),
                        int(metrics["max_line_length"][i]), float(metrics["mean_line_length"][i]),
                        float(metrics["alpha_fraction"][i]), float(metrics["alnum_fraction"][i]))
        d = CodeDoc(strings[i], m, paths[i] if paths else None, langs[i] if langs else None,
                    known[i] if known else {}, [int(k) for k in np.flatnonzero(screens[:, i])])
        reasons[i] = rules[i].check(d)
        details[i], encoded_frac[i] = d.detail, d.encoded_fraction
    metrics["encoded_fraction"] = encoded_frac
    return reasons, details, metrics
