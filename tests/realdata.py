"""Real input built from files this machine has (the Python installation)."""

from __future__ import annotations

import gzip
import json
import sysconfig
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PURELIB = Path(sysconfig.get_paths()["purelib"])


def stdlib_files(package: str = "email", limit: int = 40) -> list[Path]:
    return sorted((STDLIB / package).rglob("*.py"))[:limit]


def stack_parquet(path: Path, files: list[Path], row_group_size: int = 16) -> pa.Table:
    """A parquet file with The Stack's column names, holding real source files."""
    table = pa.table({
        "content": [f.read_text() for f in files],
        "max_stars_repo_path": [str(f.relative_to(STDLIB)) for f in files],
        "max_stars_repo_name": ["python/cpython"] * len(files),
        "max_stars_count": list(range(1, len(files) + 1)),
        "max_stars_repo_licenses": [["PSF-2.0", "0BSD"]] * len(files),
        "lang": ["Python"] * len(files),
    })
    pq.write_table(table, path, row_group_size=row_group_size)
    return table


def prose_paragraphs() -> list[str]:
    """Real English prose: the help() topics every Python install ships."""
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


def write_jsonl(path: Path, records: list[dict], compress: str | None = None) -> None:
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    if compress == "gz":
        data = gzip.compress(data, mtime=0)
    elif compress == "zst":
        import zstandard

        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
