"""Drop documents whose repository or owner asked to be left out (The Stack's opt-out).

    - optout: {file: https://.../opt-out-v2/.../data/optouts.jsonl}   # or a local file

The list's forms are in filters/optout.py. A document's `repo` (`owner/name`, The
Stack's `max_stars_repo_name` / `repo_name`) is matched case-insensitively; documents
without a repository are kept. Reasons: `owner` (the whole owner opted out) and
`repository`. Runs before dedup, so an opted-out copy is never the one dedup keeps.
The list's sha256 goes into stats.json and the card; `sha256:` pins it, so a list
that changed under a run (or between a kill and its resume) stops it instead of
giving another output.
"""

from __future__ import annotations

import gzip
import hashlib
from typing import Any

import fsspec
import pyarrow as pa
from pydantic import Field

from ..filters.optout import OptOutList, OptOutListError, parse, verdict
from .base import DocumentStage, ShardContext, StageParams, StageResult
from .paths import LocalPath


class OptOutParams(StageParams):
    file: LocalPath
    """The opt-out list: a local file, or an fsspec URL (hf://datasets/..., https://,
    s3://) read with the network; `.gz` is decompressed."""
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    """The list's expected sha256 (of the file as stored); a different list is refused."""


class OptOutError(RuntimeError):
    """The list cannot be read, is in no known form, or is not the pinned one."""


def read_list(location: str, pinned: str | None = None) -> tuple[bytes, str]:
    """The list's bytes (decompressed) and the sha256 of the file as stored."""
    try:
        with fsspec.open(location, "rb") as handle:
            stored = handle.read()
    except (OSError, ValueError) as error:
        raise OptOutError(f"optout: cannot read list {location!r}: {error}") from error
    digest = hashlib.sha256(stored).hexdigest()
    if pinned is not None and digest != pinned:
        raise OptOutError(f"optout: list {location!r} has sha256 {digest}, the manifest pins "
                          f"{pinned}: the list changed; update `sha256` to use the new one")
    return (gzip.decompress(stored) if stored[:2] == b"\x1f\x8b" else stored), digest


def list_name(location: str) -> str:
    """How published files name the list: a URL as it is, a local file by its name."""
    return location if "://" in location else location.replace("\\", "/").rsplit("/", 1)[-1]


class OptOut(DocumentStage[OptOutParams]):
    name = "optout"
    about = ("drops documents whose repository or owner asked to be left out "
             "(The Stack's opt-out list)")
    # ~7,500 MB/s measured on 3,000 stdlib files against a 100k-entry list (2026-12-01),
    # charged at 1,000 like the other set look-ups.
    rate_mb_s = (1000.0, 1000.0)
    Params = OptOutParams

    def setup(self) -> None:
        raw, self.sha256 = read_list(self.params.file, self.params.sha256)
        try:
            self.optout: OptOutList = parse(raw.decode("utf-8"), list_name(self.params.file))
        except (OptOutListError, UnicodeDecodeError) as error:
            raise OptOutError(f"optout: {error}") from error

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        if not hasattr(self, "optout"):
            self.setup()
        cache: dict[str | None, str | None] = {}  # a repository's files sit together
        reasons = []
        for repo in docs.column("repo").to_pylist():
            if repo not in cache:
                cache[repo] = verdict(repo, self.optout)
            reasons.append(cache[repo])
        details = [None if r is None else repo for r, repo in
                   zip(reasons, docs.column("repo").to_pylist(), strict=True)]
        return StageResult(docs, pa.array(reasons, pa.string()), pa.array(details, pa.string()))

    def summary(self) -> dict[str, Any]:
        """The list the run used, for stats.json and the card: its name (never a local
        folder), sha256 and size."""
        self.setup()
        return {"list": {"name": list_name(self.params.file), "sha256": self.sha256,
                         "repositories": len(self.optout.repositories),
                         "owners": len(self.optout.owners)}}
