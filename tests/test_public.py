"""What `push` uploads names no local path: not the home folder, not the run folder,
not any value a `${VAR}` or `{placeholder}` of the manifest was expanded to."""

from __future__ import annotations

import json
import os
import shutil
import sysconfig
from pathlib import Path

import pytest
import yaml

from lemur_data.pipeline.launch.checks import read_data_args
from lemur_data.pipeline.manifest import load_manifest
from lemur_data.pipeline.publish.hub import card_for, plan_files
from lemur_data.pipeline.publish.public import public_text
from tests.realdata import STDLIB
from tests.runs import run_build


def uploaded(run_dir: str) -> dict[str, bytes]:
    files = plan_files(run_dir, "megatron", card_for(run_dir, "megatron"))
    return {f.path_in_repo: f.content if f.content is not None else Path(f.local).read_bytes()
            for f in files}


@pytest.fixture(scope="module")
def private_run(ray_session, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A run whose manifest reads from ${HOME}, an env var holding a secret-looking
    folder, {stdlib}, and a path relative to the manifest."""
    base = tmp_path_factory.mktemp("public")
    home = base / "home-of-builder"
    shutil.copytree(STDLIB / "json", home / "src" / "json",
                    ignore=shutil.ignore_patterns("__pycache__"))
    secret = base / "hf_sEcReTtOkEn0123456789"
    shutil.copytree(STDLIB / "http", secret / "http", ignore=shutil.ignore_patterns("__py*"))
    shutil.copytree(STDLIB / "email", base / "local", ignore=shutil.ignore_patterns("__py*"))
    env = {"HOME": str(home), "LEMUR_SECRET_DIR": str(secret)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        raw = {"name": "public", "seed": 3, "shard": {"max_docs": 40}, "sources": [
            {"name": "home", "kind": "code", "reader": {"type": "tree", "root": "${HOME}/src"}},
            {"name": "secret", "kind": "code",
             "reader": {"type": "tree", "root": "${LEMUR_SECRET_DIR}"}},
            {"name": "stdlib", "kind": "code",
             "reader": {"type": "tree", "root": "{stdlib}", "subdirs": ["wsgiref"]}},
            {"name": "relative", "kind": "code", "reader": {"type": "tree", "root": "local"}}],
            "mixture": {"total_tokens": 100000, "weights": {"code": 1}},
            "output": {"megatron": {"max_shard_bytes": "100KB"}}}
        (base / "manifest.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        run = base / "run"
        manifest = load_manifest(base / "manifest.yaml")
        from lemur_data.pipeline.build import build

        build(manifest, str(run), progress="none")
        (base / "link").symlink_to(run)
        return {"run": str(run), "link": str(base / "link"), "home": str(home),
                "secret": str(secret), "base": str(base)} | env
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.parametrize("given", ["run", "link", "dotdot"])
def test_nothing_uploaded_names_a_local_path(private_run: dict[str, str], given: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", private_run["home"])
    run_dir = {"run": private_run["run"], "link": private_run["link"],
               "dotdot": os.path.join(private_run["run"], "..", "run")}[given]
    files = uploaded(run_dir)
    assert {"README.md", "manifest.json", "report.html", "stats.json",
            "megatron/data_args.txt"} <= set(files)
    secrets = {private_run["home"], private_run["secret"], private_run["run"],
               private_run["base"], os.path.realpath(private_run["run"]),
               sysconfig.get_paths()["stdlib"], "sEcReTtOkEn"}
    for name, data in files.items():
        found = [s for s in secrets if s.encode() in data]
        assert not found, f"{name} names {found}"
    # the placeholders the user wrote stand in their place, and rebuild the same manifest
    card = files["README.md"].decode()
    assert "${HOME}/src" in card and "${LEMUR_SECRET_DIR}" in card and "{stdlib}" in card
    record = json.loads(files["manifest.json"])
    assert "expansions" not in record
    assert record["manifest"]["sources"][3]["reader"]["root"] == "{manifest_dir}/local"
    args = files["megatron/data_args.txt"].decode().split()
    assert args[1::2] and all(p.startswith("megatron/") for p in args[1::2])


def test_the_local_manifest_keeps_resolved_paths(private_run: dict[str, str]) -> None:
    """Resume compares the resolved manifest: the local record is unchanged."""
    record = json.loads((Path(private_run["run"]) / "manifest.json").read_text())
    assert record["manifest"]["sources"][0]["reader"]["root"] == private_run["home"] + "/src"
    assert record["expansions"]["${LEMUR_SECRET_DIR}"] == private_run["secret"]


def test_public_text_respects_path_boundaries(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "builder"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    text = f"{home}/x {home}fs/y {home}-old {home}"
    assert public_text(text, str(tmp_path / "run")) == (
        f"${{HOME}}/x {home}fs/y {home}-old ${{HOME}}")


def test_space_in_run_folder_is_refused_before_packing(ray_session, tmp_path: Path) -> None:
    from lemur_data.pipeline.build import RunDirError

    shutil.copytree(STDLIB / "json", tmp_path / "tree", ignore=shutil.ignore_patterns("__py*"))
    raw = {"name": "spaces", "sources": [
        {"name": "t", "kind": "code", "reader": {"type": "tree", "root": "tree"}}],
        "mixture": {"total_tokens": 10000, "weights": {"code": 1}}}
    with pytest.raises(RunDirError, match=r"my run.* holds whitespace: Megatron-LM"):
        run_build(raw, tmp_path, tmp_path / "my run")
    assert not (tmp_path / "my run").exists()


def test_data_args_with_a_space_names_the_cause(tmp_path: Path) -> None:
    """A data_args.txt written by an older build into a folder with a space."""
    path = tmp_path / "data_args.txt"
    path.write_text("0.750000000000 /runs/my run/megatron/code-00000\n"
                    "0.250000000000 /runs/my run/megatron/text-00000\n")
    with pytest.raises(ValueError, match=r"line 1: the shard path '/runs/my run/megatron/"
                                         r"code-00000' holds whitespace"):
        read_data_args(str(path))
