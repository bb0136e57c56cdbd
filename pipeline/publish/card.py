"""The dataset card: README.md with Hub metadata, built with huggingface_hub's card API.

The YAML header is a `DatasetCardData` (license, language, task_categories,
size_categories, pretty_name, tags, configs); the body describes the sources
and their licenses, every stage with its parameters, the statistics and
figures, the mixture, tokenizer and Megatron layout, how to reproduce the run
(its manifest, embedded) and the limitations. The same stats give the same text.
"""

from __future__ import annotations

import importlib.metadata
import json
from typing import Any, Literal

from huggingface_hub import DatasetCard, DatasetCardData

from ...stages import storage
from ...stages.base import sources_in_scope
from ...stages.hooks import StageHooks, markdown_table
from ...stages.registry import STAGE_INFO, listed_hooks, stage_hooks

Include = Literal["none", "parquet", "megatron"]

# SPDX ids as documents carry them -> the Hub's license ids.
HUB_LICENSES = {
    "apache-2.0": "apache-2.0", "mit": "mit", "bsd-2-clause": "bsd-2-clause",
    "bsd-3-clause": "bsd-3-clause", "bsd-3-clause-clear": "bsd-3-clause-clear", "bsd": "bsd",
    "0bsd": "0bsd", "isc": "isc", "mpl-2.0": "mpl-2.0", "gpl-2.0": "gpl-2.0",
    "gpl-3.0": "gpl-3.0", "lgpl-2.1": "lgpl-2.1", "lgpl-3.0": "lgpl-3.0", "agpl-3.0": "agpl-3.0",
    "cc0-1.0": "cc0-1.0", "cc-by-4.0": "cc-by-4.0", "cc-by-sa-4.0": "cc-by-sa-4.0",
    "cc-by-3.0": "cc-by-3.0", "odc-by": "odc-by", "odc-by-1.0": "odc-by", "unlicense": "unlicense",
    "bsl-1.0": "bsl-1.0", "artistic-2.0": "artistic-2.0", "epl-2.0": "epl-2.0",
    "wtfpl": "wtfpl", "zlib": "zlib", "postgresql": "postgresql", "ecl-2.0": "ecl-2.0",
    "afl-3.0": "afl-3.0", "ms-pl": "ms-pl", "osl-3.0": "osl-3.0", "pddl": "pddl",
}
SIZE_CATEGORIES = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                   (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"),
                   (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
                   (10_000_000_000, "1B<n<10B"), (100_000_000_000, "10B<n<100B"),
                   (1_000_000_000_000, "100B<n<1T")]


def size_category(docs: int) -> str:
    return next((label for bound, label in SIZE_CATEGORIES if docs < bound), "n>1T")


def hub_licenses(by_license: dict[str, int]) -> list[str]:
    """The Hub license ids of the kept documents; `other` for any it has no id for."""
    ids = set()
    for name in by_license:
        ids.add(HUB_LICENSES.get(name.lower(), "other"))
    return sorted(ids, key=lambda x: (x == "other", x)) or ["other"]


def hub_languages(stats: dict[str, Any]) -> list[str]:
    """`code` when code is kept, plus the ISO 639 codes of the kept text."""
    by_kind = (stats.get("profile") or {}).get("docs_by_kind_lang") or {}
    langs = ["code"] if by_kind.get("code") else []
    for lang in sorted(by_kind.get("text", {})):
        if lang.isalpha() and lang.islower() and 2 <= len(lang) <= 3:
            langs.append(lang)
    return langs


def card_data(stats: dict[str, Any], include: Include = "parquet") -> DatasetCardData:
    tags = ["lemur-data", "pretraining", "code"]
    if stats.get("megatron"):
        tags.append("megatron-lm")
    if any(s.get("cluster_sizes") is not None for s in stats.get("stages") or []):
        tags.append("deduplicated")
    configs = None
    if include == "parquet":
        configs = [{"config_name": "default",
                    "data_files": [{"split": "train", "path": "data/*.parquet"}]}]
    hub_ids = hub_licenses((stats.get("profile") or {}).get("by_license") or {"unknown": 1})
    return DatasetCardData(
        license=hub_ids[0] if len(hub_ids) == 1 else hub_ids,
        language=hub_languages(stats) or None,
        task_categories=["text-generation"],
        task_ids=["language-modeling"],
        size_categories=[size_category(stats["output"]["docs"])],
        pretty_name=f"lemur-data {stats['manifest']}",
        tags=tags,
        configs=configs,
    )


def _sources(manifest: dict[str, Any], stats: dict[str, Any]) -> str:
    out = stats["output"]["by_source"]
    tokens = (stats.get("profile") or {}).get("tokens_by_source") or {}
    first = (stats.get("stages") or [{}])[0].get("by_source", {})
    rows = []
    for source in manifest["sources"]:
        reader = source["reader"]
        where = reader.get("paths") or reader.get("root") or reader.get("path") \
            or reader.get("object") or reader.get("name") or ""
        if isinstance(where, list):
            where = ", ".join(where[:3]) + (" ..." if len(where) > 3 else "")
        name = source["name"]
        taken = reader.get("where")  # rows outside the filter are not this source's input
        where = f"`{where}`" + (f" where `{taken['field']}` in `{taken['in']}`" if taken else "")
        rows.append([name, source["kind"], reader["type"], where,
                     source.get("lang") or "detected", reader.get("license") or "per document",
                     first.get(name, {}).get("in", {}).get("docs", 0),
                     out.get(name, {}).get("docs", 0), out.get(name, {}).get("bytes", 0),
                     tokens.get(name, "-")])
    table = markdown_table(["source", "kind", "reader", "from", "language", "declared license",
                            "docs read", "docs kept", "bytes kept", "tokens kept"], rows)
    detector = stats.get("code_language_detector")
    if detector:  # "detected": by this detector, in The Stack's names
        table += (f"\n\nCode language where a source states none: {detector}, in "
                  f"The Stack v2's language names (linguist 7.27's).{_unknown_code(stats)}")
    return table


def _unknown_code(stats: dict[str, Any]) -> str:
    """What the stages add to the code-language note (the files a detector could not
    place, and what became of them)."""
    return "".join(hooks.card_sources(stage) for stage in stats.get("stages") or []
                   if (hooks := _hooks(stage["name"])) is not None)


def _read(stats: dict[str, Any]) -> str:
    """With `read: needed`, how much of each source the run read (all else: nothing)."""
    from .report import READ_HEADERS, read_rows

    read = stats.get("read")
    if not read:
        return ""
    return ("Only what the mixture uses was read (`mixture.read: needed`, "
            f"{read['rounds']} round(s)): a seeded prefix of each source's input units. "
            "Documents in units not read were never seen, so they are not counted as "
            "removed.\n\n" + markdown_table(READ_HEADERS, read_rows(stats)))


def _scope(stage: dict[str, Any], manifest: dict[str, Any]) -> str:
    """Which of a stage's documents it applied to, when `sources`/`kinds` narrow it."""
    params = stage.get("params") or {}
    sources, kinds = params.get("sources"), params.get("kinds")
    if sources is None and kinds is None:
        return ""
    names = sources_in_scope(sources, kinds, {s["name"]: s["kind"] for s in manifest["sources"]})
    docs = sum((stage.get("by_source") or {}).get(n, {}).get("in", {}).get("docs", 0)
               for n in names)
    return (f" It applied to the {docs:,} of them from "
            + (", ".join(f"`{n}`" for n in names) or "no source")
            + "; the others passed through untouched.")


def _hooks(name: str) -> type[StageHooks] | None:
    """The stage's hooks; None for a name this lemur-data does not know (an old run's)."""
    return stage_hooks(name) if name in STAGE_INFO else None


def _stages(stats: dict[str, Any], manifest: dict[str, Any]) -> str:
    from .report import STANDARD_KEYS, flatten, merge_lines, scalar_text

    merges = merge_lines(stats)
    parts = []
    for number, stage in enumerate(stats.get("stages") or [], start=1):
        name = stage["name"]
        hooks = _hooks(name)
        note = hooks.about if hooks else ""
        parts.append(f"### {number}. {name}\n\n{note + '. ' if note else ''}"
                     f"In {stage['in']['docs']:,} documents, kept {stage['kept']['docs']:,}, "
                     f"removed {stage['removed']['docs']:,} "
                     f"({stage['removed']['bytes']:,} bytes).{_scope(stage, manifest)}"
                     + (f" {merges[name][0].upper()}{merges[name][1:]}." if name in merges
                        else ""))
        params = [(k, scalar_text(v)) for k, v in flatten(stage.get("params") or {})]
        if params:
            parts.append("Parameters: " + ", ".join(f"`{k}={json.dumps(v)}`" for k, v in params))
        if hooks:
            parts += hooks.card_notes(stage)
        if stage["removed_by_reason"]:
            parts.append(markdown_table(["reason", "docs", "bytes"], [
                [r, c["docs"], c["bytes"]] for r, c in stage["removed_by_reason"].items()]))
        # the stage's own figures (MinHash parameters, cluster sizes); breakdowns and long
        # lists stay in stats.json and the report
        hidden = STANDARD_KEYS | set(hooks.report_hidden if hooks else ())
        extra = [(k, v) for k, v in flatten({k: v for k, v in stage.items()
                                             if k not in hidden and not k.startswith("by_")})
                 if not isinstance(v, list) and k.count(".") <= 1]
        if extra:
            parts.append(markdown_table(["figure", "value"],
                                        [[k, scalar_text(v)] for k, v in extra]))
    return "\n\n".join(parts)


def _chapters(stats: dict[str, Any]) -> list[str]:
    """The chapters stages add after `Processing` (a contamination report, ...)."""
    out = []
    for stage in stats.get("stages") or []:
        hooks = _hooks(stage["name"])
        chapter = hooks.card_chapter(stage) if hooks else None
        if chapter:
            out += [f"## {chapter[0]}", chapter[1]]
    return out


def _mixture(stats: dict[str, Any], manifest: dict[str, Any]) -> str:
    mix, megatron = stats.get("mixture"), stats.get("megatron")
    parts = []
    if manifest.get("tokenizer") is not None or (stats.get("profile") or {}).get("tokens"):
        tokenizer = {k: v for k, v in (manifest.get("tokenizer") or {}).items() if v is not None}
        parts.append("Tokenizer: `" + (json.dumps(tokenizer, sort_keys=True) if tokenizer
                                       else "offline default (32k Llama-style SentencePiece)")
                     + "`; EOS after every document, no BOS (as Megatron's Llama2Tokenizer).")
    if mix:
        parts.append(markdown_table(
            ["component", "weight", "target share", "realized share", "available tokens",
             "used tokens", "epochs"],
            [[c["key"], c.get("weight") if c.get("weight") is not None else "-",
              c.get("target_share", 0.0), c.get("realized_share", 0.0), c["available_tokens"],
              c["used_tokens"], c.get("realized_epochs", c.get("epochs", 0.0))]
             for c in mix["components"]]))
        parts.append(f"Total: {mix['used_tokens']:,} tokens; worst relative share error "
                     f"{mix.get('max_share_error', 0):.2e}. Components with more than one epoch "
                     "repeat documents (whole epochs, then a seeded hash-chosen part).")
    if megatron:
        shards = megatron.get("shards") or []
        parts.append(f"Megatron-LM indexed datasets in `megatron/` ({megatron.get('dtype')} "
                     f"token ids, {len(shards)} `.bin`/`.idx` pairs, {megatron.get('tokens', 0):,}"
                     f" tokens); the blend weights for `--data-args-path` are in "
                     f"`megatron/{megatron.get('data_args', 'data_args.txt')}` (in this repo "
                     "the shards are named `megatron/<prefix>`: run Megatron from the "
                     "repo's root).")
        if shards:
            keys = [k for k in ("prefix", "component", "tokens", "sequences", "bytes")
                    if k in shards[0]]
            parts.append(markdown_table(keys, [[s.get(k) for k in keys] for s in shards]))
    return "\n\n".join(parts)


def _limitations(stats: dict[str, Any]) -> str:
    notes = ["Filters are heuristics with stated thresholds: they remove some good documents "
             "and keep some bad ones; the removed documents and their reasons are in the run's "
             "`removed/` shards."]
    by_license = (stats.get("profile") or {}).get("by_license") or {}
    unknown = by_license.get("unknown", 0)
    total = sum(by_license.values())
    if unknown:
        notes.append(f"{unknown:,} of {total:,} kept documents ({unknown / total:.1%}) carry no "
                     "license; check the terms of their sources before redistributing them.")
    entries = {s["name"]: s for s in stats.get("stages") or []}
    for hooks in listed_hooks():  # what each stage the run had, or lacked, leaves open
        notes += hooks.card_limitations(entries.get(hooks.name))
    mix = stats.get("mixture") or {}
    repeated = [c["key"] for c in mix.get("components", []) if c.get("realized_epochs", 0) > 1]
    if repeated:
        notes.append("Upsampled components repeat documents: " + ", ".join(repeated) + ".")
    notes.append("Language labels come from file types (code) and language identification "
                 "(text); both err on short or mixed documents.")
    return "\n".join(f"- {n}" for n in notes)


def render_card(stats: dict[str, Any], manifest: dict[str, Any], manifest_yaml: str,
                plots: list[str], include: Include = "parquet",
                expansions: dict[str, str] | None = None) -> DatasetCard:
    """`plots`: the figures' file names in plots/, in report order; `expansions`: the
    manifest's placeholders and their values (manifest.json's)."""
    data = card_data(stats, include)
    output = stats["output"]
    tokens = (stats.get("profile") or {}).get("tokens")
    try:
        version = importlib.metadata.version("lemur-data")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    stage_names = ", ".join(s["name"] for s in stats.get("stages") or [])
    layout = {"parquet": "`data/*.parquet`: the kept documents (columns `id`, `text`, "
                         "`source`, `kind`, `lang`, `path`, `repo`, `license`, ... plus the "
                         "scores stages added)",
              "megatron": "`megatron/`: Megatron-LM `.bin`/`.idx` shards and `data_args.txt`",
              "none": "no data files: the card, statistics and report only"}[include]
    from .report import by_count, sample_note, stage_rows

    body = [
        f"# {data.pretty_name}",
        *([sample_note(stats["sample"])] if stats.get("sample") else []),
        f"A code-intensive pretraining corpus curated by lemur-data {version} "
        f"from the manifest `{stats['manifest']}` (fingerprint `{stats['fingerprint']}`): "
        f"{output['docs']:,} documents, {output['bytes']:,} bytes of text"
        + (f", {tokens:,} tokens" if tokens is not None else "")
        + f", kept of {stats['input']['docs']:,} read. Stages: {stage_names}.",
        f"Files: {layout}; `stats.json` (every count below), `report.html` (the run report) "
        "and `plots/`.",
        "## Sources", _sources(manifest, stats), *([_read(stats)] if stats.get("read") else []),
        "## Licenses of the kept documents",
        markdown_table(["license", "docs"],
                  [[k, v] for k, v in by_count((stats.get("profile") or {}).get("by_license")
                                               or {})]),
        "## Processing", _stages(stats, manifest),
        *_chapters(stats),
        "## Statistics",
        markdown_table(["stage", "in docs", "kept docs", "removed docs", "in bytes", "kept bytes",
                   "removed bytes", "top reasons"], stage_rows(stats)),
        markdown_table(["language", "docs kept", "bytes kept"],
                  [[lang, c["docs"], c["bytes"]] for lang, c in
                   sorted(output["by_lang"].items(), key=lambda kv: (-kv[1]["bytes"], kv[0]))]),
        *[f"![{name.rsplit('.', 1)[0]}](plots/{name})" for name in plots],
    ]
    mixture = _mixture(stats, manifest)
    if mixture:
        body += ["## Tokenizer, mixture and Megatron layout", mixture]
    train = manifest.get("train")
    if train:
        body += ["Training preset: `" + json.dumps(train, sort_keys=True) + "` (see the run's "
                 "`launch/`)."]
    body += [
        "## How to reproduce",
        "Install lemur-data, save the manifest below as `manifest.yaml` and run "
        "`lemur-data build --manifest manifest.yaml` (add `--ray-address auto` on a Ray "
        "cluster). The same manifest and inputs give byte-identical output. Local paths "
        "are written as the placeholders the manifest used (`{stdlib}`, `${HOME}`, "
        "`{manifest_dir}`: the folder of the manifest file)."
        + (" Files under `{manifest_dir}` sit beside the manifest: copy them along with "
           "it (for a manifest of the lemur-data repository, run it from a clone)."
           if "{manifest_dir}" in (expansions or {}) else ""),
        "```yaml\n" + manifest_yaml.rstrip() + "\n```",
        "## Limitations", _limitations(stats),
    ]
    content = f"---\n{data.to_yaml()}\n---\n\n" + "\n\n".join(body) + "\n"
    return DatasetCard(content)


def write_card(run_dir: str, stats: dict[str, Any], plots: list[str], manifest_yaml: str,
               include: Include = "parquet") -> str:
    record = storage.read_json(storage.join(run_dir, "manifest.json"))
    from .public import public_text

    card = render_card(stats, record["manifest"], manifest_yaml, plots, include,
                       record.get("expansions"))
    path = storage.join(run_dir, "README.md")
    storage.write_bytes_atomic(path, public_text(str(card), run_dir).encode())
    return path
