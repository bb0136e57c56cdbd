"""`lemur-data push`: a finished run to a Hugging Face Hub dataset repo.

Repo layout: `README.md` (the card, written for what is uploaded), `stats.json`,
`timings.json`, `manifest.json`, `report.html`, `plots/` (SVG), and the chosen
data: `data/*.parquet` (the kept documents) or `megatron/` (`.bin/.idx`,
`data_args.txt`). The files are gathered as symlinks in a temporary folder, so
the run folder is never written to. The card, stats and report go in one
commit, the data in batches of bounded size (each batch a resumable commit; a
rerun re-sends only what the Hub does not hold, as uploads are content-addressed).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fsspec.implementations.local import LocalFileSystem
from rich.console import Console

from ...stages import storage
from .card import Include, render_card
from .public import public_text

Progress = Literal["bar", "log", "none", "auto"]
BATCH_BYTES = 8 * 10**9
"""Most bytes of data files in one upload call (one line of progress in log mode)."""
LARGE_FOLDER_BYTES = 50 * 10**9
"""Above this, huggingface_hub versions that have `upload_large_folder` use it."""


class PushError(Exception):
    """The run cannot be pushed (no token, the Hub refused)."""


class NotARunError(PushError):
    """The folder given is not a finished local run."""


@dataclass(frozen=True)
class RepoFile:
    path_in_repo: str
    local: str  # empty for files rendered at push time (the card, the rewritten copies)
    size: int
    content: bytes | None = None

    @property
    def is_data(self) -> bool:
        return self.path_in_repo.startswith(("data/", "megatron/"))


def _local_run(run_dir: str) -> Path:
    fs, path = storage.filesystem(run_dir)
    if not isinstance(fs, LocalFileSystem):
        raise NotARunError(f"push reads a local run folder; copy {run_dir} here first")
    root = Path(path)
    if not (root / "stats.json").is_file():
        raise NotARunError(f"{run_dir} holds no stats.json: not a finished run "
                        "(run `lemur-data build` to the end first)")
    return root


def plan_files(run_dir: str, include: Include, card: bytes) -> list[RepoFile]:
    """What goes to the repo, in upload order: documentation first, then the data."""
    root = _local_run(run_dir)
    files = [RepoFile("README.md", "", len(card), card)]
    for name in ("stats.json", "timings.json", "manifest.json", "report.html"):
        if (root / name).is_file():
            text = (root / name).read_text()
            if name == "manifest.json":  # the resolved values are what public_text hides
                record = json.loads(text)
                record.pop("expansions", None)
                text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            public = public_text(text, run_dir).encode()
            files.append(RepoFile(name, "", len(public), public))
    for plot in _plot_files(root):
        files.append(RepoFile(f"plots/{plot.name}", str(plot), plot.stat().st_size))
    stats = storage.read_json(str(root / "stats.json"))
    if include == "parquet":
        out = root / stats["output"]["dir"]
        for name in stats["output"]["shards"]:
            files.append(RepoFile(f"data/{name}", str(out / name), (out / name).stat().st_size))
    elif include == "megatron":
        folder = root / "megatron"
        if not folder.is_dir():
            raise NotARunError(f"{run_dir} has no megatron/ output: this manifest has no "
                            "`mixture` or `output.megatron`")
        for path in sorted(p for p in folder.iterdir() if p.is_file()
                           and not p.name.startswith(".tmp-")):
            if path.name == "data_args.txt":
                args = relative_data_args(path.read_text(), str(folder))
                files.append(RepoFile("megatron/data_args.txt", "", len(args), args))
            else:
                files.append(RepoFile(f"megatron/{path.name}", str(path), path.stat().st_size))
    return files


def relative_data_args(text: str, folder: str) -> bytes:
    """data_args.txt names the shards by absolute local path; in the repo, by `megatron/...`.

    Every shard sits in `folder`, so each line becomes `weight megatron/<name>` whatever
    form of the folder the build wrote (a symlink, `..`, another mount): the local path
    never leaves the machine. Megatron resolves them against its working folder: run it
    from the downloaded repo.
    """
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        weight, _, prefix = line.strip().partition(" ")
        name = prefix.strip().rstrip("/").rsplit("/", 1)[-1]
        if not (Path(folder) / f"{name}.bin").is_file():
            raise PushError(f"{folder}/data_args.txt line {number}: no shard {name}.bin in "
                            f"{folder}")
        lines.append(f"{weight} megatron/{name}\n")
    return "".join(lines).encode()


def _plot_files(root: Path) -> list[Path]:
    """The figures of plots/: SVG, or the PNGs an earlier lemur-data drew there (until
    `lemur-data card` redraws them)."""
    return sorted(p for p in (root / "plots").glob("*") if p.suffix in (".svg", ".png"))


def card_for(run_dir: str, include: Include) -> bytes:
    """The card as it fits what is uploaded (configs point at data/ only if it is there)."""
    from .plots import PLOTS
    from .report import manifest_yaml

    root = _local_run(run_dir)
    stats = storage.read_json(str(root / "stats.json"))
    record = storage.read_json(str(root / "manifest.json"))
    # the run's own figures in report order, then the stages' (by name)
    order = [make.__name__ for make in PLOTS]
    plots = sorted((p.name for p in _plot_files(root)),
                   key=lambda n: (order.index(p) if (p := n.rsplit(".", 1)[0]) in order
                                  else len(order), n))
    card = render_card(stats, record["manifest"], manifest_yaml(run_dir), plots, include,
                       record.get("expansions"))
    return public_text(str(card), run_dir).encode()


def resolve_token(token: str | None = None) -> str:
    from huggingface_hub import get_token

    token = token or os.environ.get("HF_TOKEN") or get_token()
    if not token:
        raise PushError("no Hugging Face token: set HF_TOKEN or run `hf auth login`")
    return token


def _batches(files: list[RepoFile], most: int) -> list[list[RepoFile]]:
    out: list[list[RepoFile]] = []
    size = most
    for f in files:
        if size + f.size > most and (not out or out[-1]):
            out.append([])
            size = 0
        out[-1].append(f)
        size += f.size
    return out


def push(run_dir: str, repo_id: str, *, private: bool = False, include: Include = "parquet",
         progress: Progress = "auto", console: Console | None = None,
         endpoint: str | None = None, token: str | None = None,
         batch_bytes: int = BATCH_BYTES) -> dict[str, Any]:
    """Create the dataset repo (if needed) and upload the run; returns what was sent."""
    from huggingface_hub import HfApi
    from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

    console = console or Console(stderr=True)
    card = card_for(run_dir, include)
    files = plan_files(run_dir, include, card)
    token = resolve_token(token)
    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None, token=token)
    if progress == "auto":
        progress = "bar" if console.is_terminal else "log"
    quiet = progress != "bar"
    if quiet:
        disable_progress_bars()
    started = time.perf_counter()
    try:
        url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="lemur-push-") as staging:
            _stage(Path(staging), files)
            docs = [f for f in files if not f.is_data]
            data = [f for f in files if f.is_data]
            api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=staging,
                              allow_patterns=[f.path_in_repo for f in docs],
                              commit_message="lemur-data: dataset card, stats and report")
            _log(progress, console, f"[push] card, stats, report: {len(docs)} files, "
                 f"{_mb(sum(f.size for f in docs))} MB", started)
            _upload_data(api, repo_id, Path(staging), data, batch_bytes, progress, console,
                         started)
    finally:
        if quiet:
            enable_progress_bars()
    return {"url": str(url), "files": [f.path_in_repo for f in files],
            "bytes": sum(f.size for f in files), "seconds": time.perf_counter() - started}


def _upload_data(api: Any, repo_id: str, staging: Path, data: list[RepoFile], batch_bytes: int,
                 progress: str, console: Console, started: float) -> None:
    total = sum(f.size for f in data)
    if not data:
        return
    if total > LARGE_FOLDER_BYTES and hasattr(api, "upload_large_folder"):
        # huggingface_hub 1.x: resumable multi-commit uploads of very large folders.
        api.upload_large_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(staging),
                                allow_patterns=[f.path_in_repo for f in data])
        _log(progress, console, f"[push] data: {len(data)} files, {_mb(total)} MB", started)
        return
    sent = 0
    batches = _batches(data, batch_bytes)
    for number, batch in enumerate(batches, start=1):
        api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(staging),
                          allow_patterns=[f.path_in_repo for f in batch],
                          commit_message=f"lemur-data: data {number}/{len(batches)}")
        sent += sum(f.size for f in batch)
        _log(progress, console, f"[push] data batch {number}/{len(batches)}: {len(batch)} files, "
             f"{_mb(sent)} of {_mb(total)} MB", started)


def _stage(staging: Path, files: list[RepoFile]) -> None:
    for f in files:
        target = staging / f.path_in_repo
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.content is not None:
            target.write_bytes(f.content)
        else:
            target.symlink_to(f.local)


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f}"


def _log(progress: str, console: Console, message: str, started: float) -> None:
    if progress == "none":
        return
    elapsed = time.perf_counter() - started
    console.print(f"{message} ({elapsed:,.0f} s)", highlight=False, markup=False, soft_wrap=True)


def describe(files: list[RepoFile]) -> list[str]:
    """The dry run's listing: one line per file, then the total."""
    width = max(len(f.path_in_repo) for f in files)
    lines = [f"{f.path_in_repo:<{width}}  {f.size:>15,} bytes" for f in files]
    lines.append(f"{len(files)} files, {sum(f.size for f in files):,} bytes")
    return lines
