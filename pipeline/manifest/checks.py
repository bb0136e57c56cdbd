"""The checks across a manifest's keys that its schema cannot make alone: each stage's
parameters and order, the names sources and weights refer to, what a late stage would
otherwise find missing, and non-finite numbers."""

from __future__ import annotations

import math
import os
from typing import Any

from pydantic import ValidationError

from ...filters.langid import code as code_detector
from ...stages.registry import STAGE_INFO, STAGES
from .errors import describe
from .schema import Manifest


def non_finite(node: Any, where: str = "") -> list[str]:
    """`.inf` and `.nan` anywhere in the manifest: YAML reads them as floats, which every
    float key would take (weights, thresholds, budgets) and a stage then hangs or
    crashes on. No key of a manifest means anything by them."""
    if isinstance(node, float) and not math.isfinite(node):
        return [f"{where or '<manifest>'}: {node} is not a finite number"]
    if isinstance(node, dict):
        return [p for k, v in node.items()
                for p in non_finite(v, f"{where}.{k}" if where else str(k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in non_finite(v, f"{where}[{i}]")]
    return []


def check_resolvable(manifest: Manifest) -> list[str]:
    """What a build would otherwise find missing only when a late stage gets to it: the
    tokenizer's file, and mixture keys that no document can match."""
    problems = []
    tokenizer = manifest.tokenizer
    if tokenizer is not None:
        for key in ("file", "sentencepiece"):
            path = getattr(tokenizer, key)
            if path and "://" not in path and not os.path.isfile(path):
                what = "is a folder" if os.path.isdir(path) else "no such file"
                problems.append(f"tokenizer.{key}: {path}: {what}")
        if tokenizer.package:
            problems += _check_package_file(tokenizer.package)
    if manifest.mixture:
        problems += _check_weight_languages(manifest)
        from ...stages.mix.params import MixParams, components_of

        try:
            components_of(MixParams(weights=dict(manifest.mixture.weights),
                                    total_tokens=manifest.mixture.total_tokens))
        except ValueError as error:
            problems.append(f"mixture.weights: {error}")
    return problems


def _check_package_file(spec: str) -> list[str]:
    from ...stages.tokenize.tokenizer import package_file

    try:
        package_file(spec)
    except (ValueError, ImportError, OSError) as error:
        return [f"tokenizer.package: {error}"]
    return []


def _check_weight_languages(manifest: Manifest) -> list[str]:
    """`code:Pyhton`: a language no code document can have (The Stack's names, which
    langid and ingest give, or a source's own `lang`) matches nothing, and the mix found
    it only after every stage had run. A weight key is a component's name, matched as
    written: an alias (`python`, `Rocq Prover`) is refused with The Stack's name."""
    assert manifest.mixture is not None
    fixed = {s.lang for s in manifest.sources if s.lang}
    kinds = {s.name: s.kind for s in manifest.sources}
    if code_detector.available() is not None:
        return []  # no detector to ask: the mix still refuses an empty component
    problems = []
    for key in manifest.mixture.weights:
        base, _, lang = key.removesuffix("@repo").partition(":")
        if not lang or (kinds.get(base, base) != "code") or lang in fixed:
            continue
        if code_detector.language_by_name(lang) != lang:
            known = code_detector.language_by_name(lang)
            hint = f" (The Stack's name is {known!r})" if known else ""
            problems.append(f"mixture.weights.{key}: no code language {lang!r}{hint}; "
                            "languages are The Stack's names (Python, C++, Jupyter Notebook) "
                            "or a source's `lang`")
    return problems


def check_stages(stages: list[Any]) -> list[str]:
    problems = []
    for i, entry in enumerate(stages):
        if not isinstance(entry, dict) or not all(
                isinstance(p, dict | None) for p in entry.values()):
            continue  # the schema's own error names it
        if len(entry) != 1:
            problems.append(f"stages[{i}]: each stage is a mapping of one name to its "
                            f"parameters (got keys {sorted(entry)})")
            continue
        (name, params), = entry.items()
        if name not in STAGES:
            problems.append(f"stages[{i}]: unknown stage {name!r}; known: {sorted(STAGES)}")
            continue
        try:
            STAGES[name].Params.model_validate(params or {})
        except ValidationError as error:
            problems += describe(error, prefix=f"stages[{i}].{name}.")
    names = [next(iter(e)) if isinstance(e, dict) and len(e) == 1 else None for e in stages]
    for i, name in enumerate(names):
        info = STAGE_INFO.get(name) if isinstance(name, str) else None
        for j, earlier in enumerate(names[:i]):
            if info is not None and earlier in info.before:
                problems.append(f"stages[{i}].{name}: must come before {earlier} "
                                f"(stages[{j}]); move it up")
    return problems


def check_references(manifest: Manifest) -> list[str]:
    problems = []
    names = [s.name for s in manifest.sources]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"sources: name {name!r} is used more than once")
    for i, entry in enumerate(manifest.stages):
        for stage_name, params in entry.items():
            for source in (params or {}).get("sources") or []:
                if source not in names:
                    problems.append(f"stages[{i}].{stage_name}.sources: no source named "
                                    f"{source!r} (sources are {names})")
    missing = code_detector.available() if manifest.detects_code_language else None
    if missing:
        code = [s.name for s in manifest.sources if s.kind == "code" and s.lang is None]
        problems.append(f"sources {code}: {missing}")
    if manifest.train and not manifest.packs:
        problems.append("train: needs data to train on: add a mixture or output.megatron")
    if manifest.mixture:
        for key in manifest.mixture.weights:
            base = key.removesuffix("@repo").split(":", 1)[0]  # @repo: repository documents
            if base not in ("code", "text") and base not in names:
                problems.append(f"mixture.weights.{key}: not a kind (code, text) or a source "
                                f"name ({names})")
    return problems
