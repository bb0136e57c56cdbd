"""`lemur-data push` through the real huggingface_hub client, against a local fake Hub.

The fake implements just what create_repo and upload_folder call (repo creation,
README YAML validation, preupload, the LFS batch API with basic transfer, the
NDJSON commit) on 127.0.0.1, and records every request. Xet storage is switched
off so that large files take the LFS path the fake can serve.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from huggingface_hub import DatasetCard

from lemur_data.pipeline.cli import main
from tests.realdata import STDLIB
from tests.runs import run_build

LFS_SUFFIXES = (".parquet", ".bin", ".idx")


class FakeHub:
    """Repos, their files and every request, served on 127.0.0.1 by a thread."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.repos: dict[str, dict[str, Any]] = {}
        self.files: dict[str, dict[str, bytes]] = {}
        self.commits: list[dict[str, Any]] = []
        self.lfs: dict[str, bytes] = {}
        self.validated: list[str] = []
        self.lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                hub.handle(self, "POST")

            def do_PUT(self) -> None:
                hub.handle(self, "PUT")

            def do_GET(self) -> None:
                hub.handle(self, "GET")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.timeout = 5
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def handle(self, request: BaseHTTPRequestHandler, method: str) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        path = request.path.split("?", 1)[0]
        with self.lock:
            self.requests.append({"method": method, "path": path,
                                  "auth": request.headers.get("Authorization"),
                                  "bytes": len(body)})
        status, payload = self.route(method, path, body)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def route(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        if method == "POST" and path == "/api/repos/create":
            spec = json.loads(body)
            repo = f"{spec['organization']}/{spec['name']}"
            if repo in self.repos:  # the Hub names the existing repo in its 409
                return 409, {"error": "You already created this dataset repo",
                             "url": f"{self.url}/datasets/{repo}"}
            self.repos[repo] = spec
            self.files[repo] = {}
            return 200, {"url": f"{self.url}/datasets/{repo}", "name": repo}
        if method == "POST" and path == "/api/validate-yaml":
            content = json.loads(body)["content"]
            self.validated.append(content)
            header = content.split("---\n")[1] if content.startswith("---\n") else ""
            try:
                yaml.safe_load(header)
            except yaml.YAMLError as error:
                return 400, {"error": str(error)}
            return 200, {"errors": [], "warnings": []}
        if method == "POST" and (m := re.fullmatch(r"/api/datasets/(.+)/preupload/(.+)", path)):
            files = json.loads(body)["files"]
            return 200, {"files": [{"path": f["path"], "shouldIgnore": False,
                                    "uploadMode": "lfs" if f["path"].endswith(LFS_SUFFIXES)
                                    else "regular"} for f in files]}
        if method == "POST" and path.endswith(".git/info/lfs/objects/batch"):
            objects = json.loads(body)["objects"]
            # an object the store already holds gets no "actions": the client skips it
            return 200, {"transfer": "basic", "objects": [
                {"oid": o["oid"], "size": o["size"], "authenticated": True,
                 **({} if o["oid"] in self.lfs else {"actions": {"upload": {
                     "href": f"{self.url}/lfs-upload/{o['oid']}"}}})}
                for o in objects]}
        if method == "PUT" and (m := re.fullmatch(r"/lfs-upload/([0-9a-f]{64})", path)):
            if hashlib.sha256(body).hexdigest() != m.group(1):
                return 400, {"error": "sha256 mismatch"}
            self.lfs[m.group(1)] = body
            return 200, {}
        if method == "POST" and (m := re.fullmatch(r"/api/datasets/(.+)/commit/(.+)", path)):
            return self.commit(m.group(1), body)
        return 404, {"error": f"fake hub: no route for {method} {path}"}

    def commit(self, repo: str, body: bytes) -> tuple[int, Any]:
        if repo not in self.repos:
            return 404, {"error": "Repository not found"}
        header, added = {}, {}
        for line in body.decode().splitlines():
            item = json.loads(line)
            if item["key"] == "header":
                header = item["value"]
            elif item["key"] == "file":
                added[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            elif item["key"] == "lfsFile":
                oid = item["value"]["oid"]
                if oid not in self.lfs:
                    return 400, {"error": f"LFS object {oid} was never uploaded"}
                added[item["value"]["path"]] = self.lfs[oid]
        self.files[repo].update(added)
        oid = hashlib.sha1(body).hexdigest()
        self.commits.append({"repo": repo, "summary": header.get("summary"),
                             "paths": sorted(added)})
        return 200, {"commitUrl": f"{self.url}/datasets/{repo}/commit/{oid}", "commitOid": oid}


@pytest.fixture(scope="module")
def built_run(ray_session, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real run with parquet output and Megatron shards."""
    base = tmp_path_factory.mktemp("push")
    root = base / "tree"
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    raw = {"name": "push-test", "seed": 11, "shard": {"max_docs": 40},
           "sources": [{"name": "stdlib", "kind": "code",
                        "reader": {"type": "tree", "root": str(root), "license": "PSF-2.0"}},
                       {"name": "topics", "kind": "text", "lang": "en",
                        "reader": {"type": "python_object",
                                   "object": "pydoc_data.topics:topics"}}],
           "stages": [{"exact_dedup": {"partitions": 2}}],
           "mixture": {"total_tokens": 200000, "weights": {"code": 10, "text": 1}},
           "output": {"megatron": {"max_shard_bytes": "150KB"}}}
    run = base / "run"
    run_build(raw, base, run)
    return run


@pytest.fixture
def hub_env(monkeypatch: pytest.MonkeyPatch):
    import huggingface_hub.constants

    with FakeHub() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", "hf_fake_token_for_tests")
        # hf_xet would send large files to a Xet CAS; take the LFS path the fake serves.
        monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)
        yield hub


def test_push_creates_repo_and_uploads_card_stats_report_and_parquet(
        built_run: Path, hub_env: FakeHub, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["push", "--run-dir", str(built_run), "--repo-id", "lemur/push-test",
                 "--private", "--progress", "log"])
    assert code == 0
    log = capsys.readouterr().err.splitlines()
    assert log[0].startswith("[push] card, stats, report: 9 files")
    assert log[1].startswith("[push] data batch 1/1: ")
    assert hub_env.repos["lemur/push-test"]["type"] == "dataset"
    assert hub_env.repos["lemur/push-test"].get("visibility") == "private" or \
        hub_env.repos["lemur/push-test"].get("private") is True
    api = [r for r in hub_env.requests if r["path"].startswith("/api/")]
    assert api and all(r["auth"] == "Bearer hf_fake_token_for_tests" for r in api)
    files = hub_env.files["lemur/push-test"]
    stats = json.loads((built_run / "stats.json").read_text())
    expected = {"README.md", "stats.json", "timings.json", "manifest.json", "report.html",
                *{f"plots/{p.name}" for p in (built_run / "plots").glob("*.svg")},
                *{f"data/{name}" for name in stats["output"]["shards"]}}
    assert set(files) == expected
    # uploaded bytes are the run's bytes (parquet went through the LFS path)
    out = built_run / stats["output"]["dir"]
    for name in stats["output"]["shards"]:
        assert files[f"data/{name}"] == (out / name).read_bytes()
    assert files["stats.json"] == (built_run / "stats.json").read_bytes()
    assert files["plots/waterfall.svg"] == (built_run / "plots" / "waterfall.svg").read_bytes()
    assert any(r["path"].startswith("/lfs-upload/") for r in hub_env.requests)
    rows = sum(pq.read_metadata(out / name).num_rows for name in stats["output"]["shards"])
    assert rows == stats["output"]["docs"]
    # the card the Hub got parses, points its config at the uploaded parquet, and was validated
    card = DatasetCard(files["README.md"].decode())
    assert card.data.configs[0]["data_files"][0]["path"] == "data/*.parquet"
    assert card.data.task_categories == ["text-generation"]
    assert hub_env.validated and hub_env.validated[-1] == files["README.md"].decode()
    # documentation first, in its own commit; then the data
    assert hub_env.commits[0]["paths"] == sorted(p for p in expected if not p.startswith("data/"))
    assert all(p.startswith("data/") for c in hub_env.commits[1:] for p in c["paths"])


def test_push_megatron_rewrites_data_args_and_repushing_is_accepted(
        built_run: Path, hub_env: FakeHub) -> None:
    args = ["push", "--run-dir", str(built_run), "--repo-id", "lemur/mega", "--include",
            "megatron", "--progress", "none"]
    assert main(args) == 0
    files = hub_env.files["lemur/mega"]
    megatron = built_run / "megatron"
    bins = sorted(p.name for p in megatron.glob("*.bin"))
    assert len(bins) > 1
    for name in bins:
        assert files[f"megatron/{name}"] == (megatron / name).read_bytes()
    assert not any(p.startswith("data/") for p in files)
    card = DatasetCard(files["README.md"].decode())
    assert "configs" not in card.data.to_dict()  # no parquet in this repo: no dataset-viewer config
    # data_args.txt names the shards inside the repo, never the builder's absolute paths
    local = (megatron / "data_args.txt").read_text().split()
    pushed = files["megatron/data_args.txt"].decode().split()
    assert pushed[0::2] == local[0::2]
    assert pushed[1::2] == [f"megatron/{Path(p).name}" for p in local[1::2]]
    # a second push of the same run: the repo exists (409 accepted), LFS objects not resent
    uploads = sum(r["path"].startswith("/lfs-upload/") for r in hub_env.requests)
    assert main(args) == 0
    assert sum(r["path"].startswith("/lfs-upload/") for r in hub_env.requests) == uploads


def test_dry_run_lists_paths_and_sizes_without_network(
        built_run: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("HF_TOKEN", raising=False)
    assert main(["push", "--run-dir", str(built_run), "--repo-id", "a/b", "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    listed = {line.split()[0]: int(line.split()[1].replace(",", "")) for line in lines[:-1]}
    assert listed["stats.json"] == (built_run / "stats.json").stat().st_size
    stats = json.loads((built_run / "stats.json").read_text())
    for name in stats["output"]["shards"]:
        path = built_run / stats["output"]["dir"] / name
        assert listed[f"data/{name}"] == path.stat().st_size
    assert lines[-1] == f"{len(listed)} files, {sum(listed.values()):,} bytes"


def test_push_without_token_or_network_fails_clearly(
        built_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no saved login
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "hf-home" / "token"))
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH",
                        str(tmp_path / "hf-home" / "token"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_STORED_TOKENS_PATH",
                        str(tmp_path / "hf-home" / "stored_tokens"))
    assert main(["push", "--run-dir", str(built_run), "--repo-id", "a/b"]) == 1
    assert "no Hugging Face token" in capsys.readouterr().err
    # a token but no Hub: port 9 (discard) on 127.0.0.1 refuses the connection
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    assert main(["push", "--run-dir", str(built_run), "--repo-id", "a/b"]) == 1
    assert "push to a/b failed" in capsys.readouterr().err


def test_log_progress_prints_plain_periodic_lines() -> None:
    """Cluster jobs get a start line, a heartbeat while tasks run, and the final count."""
    import io
    import time

    from rich.console import Console

    from lemur_data.pipeline import progress

    out = io.StringIO()
    console = Console(file=out, width=40)  # narrow: lines must still not wrap
    tracker = progress.PhaseProgress("03-minhash.bands", 2, "log", console)
    stop = threading.Event()
    beat = threading.Thread(target=tracker.heartbeat, args=(stop, 0.05), daemon=True)
    beat.start()
    tracker({"docs": 7})
    deadline = time.monotonic() + 5
    while "still running" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.02)
    tracker({"docs": 5})
    stop.set()
    beat.join(timeout=5)
    lines = out.getvalue().splitlines()
    assert any(line.startswith("[03-minhash.bands] 1/2 tasks, 7 docs, still running")
               for line in lines)
    assert lines[-1].startswith("[03-minhash.bands] 2/2 tasks, 12 docs, ")
    assert all(line.startswith("[03-minhash.bands] ") for line in lines)
