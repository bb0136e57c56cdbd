"""The benchmark's input: one set of documents, exported as jsonl that both pipelines read.

The default is a fixed-size sample of what manifests/demo.yaml reads (the Python
installation's source code and the prose it ships), read with our own readers so the
documents are the demo's. `--corpus PATH` takes a folder tree (prose by extension,
the rest code) or jsonl / parquet files (a `text` or `content` field; `kind` if given).

Output: `<out>/code/part-NNN.jsonl` and `<out>/text/part-NNN.jsonl`, records
`{"id", "text", "kind", "lang", "path"}` with `id == path` unique, files balanced by bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
PROSE_SUFFIXES = {".md", ".rst", ".txt"}
CODE_SUFFIXES = {".py", ".pyi", ".pyx", ".c", ".h", ".cc", ".cpp", ".hpp", ".js", ".ts",
                 ".java", ".go", ".rs", ".rb", ".sh", ".css", ".html", ".json", ".yaml",
                 ".yml", ".toml", ".pl", ".lua", ".sql"}


def demo_documents() -> Iterator[dict]:
    """The demo manifest's documents, as our readers give them (quarantined ones left out)."""
    from lemur_data.pipeline.manifest import load_manifest
    from lemur_data.stages.ingest import plan_units, read_unit

    manifest = load_manifest(str(REPO / "manifests" / "demo.yaml"))
    for source in manifest.sources:
        info = source.info()
        for unit in plan_units(source.reader, info, manifest.shard.max_docs,
                               int(manifest.shard.max_bytes)):
            table = read_unit(source.reader, info, unit)
            for row in table.to_pylist():
                if row.get("reason") is None:
                    yield {"text": row["text"], "kind": source.kind, "lang": row["lang"],
                           "path": f"{source.name}/{row['path']}"}


def tree_documents(root: Path) -> Iterator[dict]:
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        suffix = path.suffix.lower()
        if suffix not in PROSE_SUFFIXES | CODE_SUFFIXES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        yield {"text": text, "kind": "text" if suffix in PROSE_SUFFIXES else "code",
               "lang": None, "path": str(path.relative_to(root))}


def record_documents(files: list[Path]) -> Iterator[dict]:
    for file in files:
        if file.suffix == ".parquet":
            rows: Iterator[dict] = iter(pq.read_table(file).to_pylist())
        else:
            import fsspec

            with fsspec.open(str(file), "rt", compression="infer") as handle:
                rows = iter([json.loads(line) for line in handle if line.strip()])
        for number, row in enumerate(rows):
            text = row.get("text") or row.get("content")
            if isinstance(text, str) and text.strip():
                yield {"text": text, "kind": row.get("kind") or "text", "lang": row.get("lang"),
                       "path": str(row.get("path") or row.get("id") or row.get("url")
                                   or f"{file.name}#{number}")}


def _stable(key: str) -> float:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") / 2**64


def sample(documents: list[dict], limit_mb: float | None) -> list[dict]:
    """All prose, then a fixed hash-chosen share of the code to reach `limit_mb`."""
    size = {id(d): len(d["text"].encode()) for d in documents}
    if limit_mb is None:
        return documents
    text_bytes = sum(size[id(d)] for d in documents if d["kind"] == "text")
    code_bytes = sum(size[id(d)] for d in documents if d["kind"] == "code")
    share = min(1.0, max(0.0, limit_mb * 1e6 - text_bytes) / max(code_bytes, 1))
    return [d for d in documents if d["kind"] == "text" or _stable(d["path"]) < share]


def export(documents: list[dict], out: Path, files: dict[str, int]) -> dict[str, float]:
    """Write the jsonl parts; `files` = parts per kind. Returns MB per kind."""
    seen: set[str] = set()
    unique = []
    for doc in documents:  # one document per path: ids must be unique on both sides
        if doc["path"] not in seen:
            seen.add(doc["path"])
            unique.append({"id": doc["path"], **doc})
    sizes: dict[str, float] = {}
    for kind, count in files.items():
        docs = sorted((d for d in unique if d["kind"] == kind), key=lambda d: d["path"])
        parts: list[list[str]] = [[] for _ in range(count)]
        loads = [0] * count
        for doc in docs:  # greedy by bytes, in path order: deterministic and balanced
            target = loads.index(min(loads))
            parts[target].append(json.dumps(doc, ensure_ascii=False) + "\n")
            loads[target] += len(doc["text"].encode())
        folder = out / kind
        folder.mkdir(parents=True, exist_ok=True)
        for number, lines in enumerate(parts):
            if lines:
                (folder / f"part-{number:03d}.jsonl").write_text("".join(lines), encoding="utf-8")
        sizes[kind] = sum(loads) / 1e6
    return sizes


def build_corpus(out: Path, corpus: str | None, limit_mb: float | None,
                 files: dict[str, int]) -> dict[str, float]:
    if corpus is None:
        documents = list(demo_documents())
    else:
        path = Path(corpus)
        if path.is_dir() and not any(path.glob("*.jsonl*")) and not any(path.glob("*.parquet")):
            documents = list(tree_documents(path))
        else:
            found = sorted(path.glob("*.jsonl*")) + sorted(path.glob("*.parquet")) \
                if path.is_dir() else [path]
            documents = list(record_documents(found))
    return export(sample(documents, limit_mb), out, files)
