"""The command line as a user runs it: exit codes, messages, kill -9 and resume."""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.realdata import STDLIB, stack_parquet, stdlib_files
from tests.runs import digest

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "lemur_data.pipeline.cli"]


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("command", [[], ["build"], ["validate"], ["plan"], ["index"]])
def test_help_everywhere(command: list[str]) -> None:
    result = cli(*command, "--help")
    assert result.returncode == 0 and "usage: lemur-data" in result.stdout


def test_usage_errors_exit_2() -> None:
    assert cli("frobnicate").returncode == 2
    assert cli("build").returncode == 2  # --manifest is required
    missing = cli("validate", "--manifest", "nope.yaml")
    assert missing.returncode == 2 and "nope.yaml: invalid manifest" in missing.stderr


def test_manifest_typo_exits_2_naming_the_key(tmp_path: Path) -> None:
    manifest = yaml.safe_load((REPO / "manifests" / "demo.yaml").read_text())
    manifest["sources"][1]["reader"]["rooot"] = manifest["sources"][1]["reader"].pop("root")
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(manifest))
    result = cli("build", "--manifest", str(path))
    assert result.returncode == 2
    assert "sources[1].reader.rooot: unknown key" in result.stderr
    assert "sources[1].reader.root: required key is missing" in result.stderr


def test_validate_and_plan_the_demo() -> None:
    assert cli("validate", "--manifest", "manifests/demo.yaml").returncode == 0
    plan = cli("plan", "--manifest", "manifests/demo.yaml")
    assert plan.returncode == 0, plan.stderr
    assert "python-stdlib" in plan.stdout and "01-ingest" in plan.stdout


_IMPORTS_PROBE = """
import contextlib, io, sys
from lemur_data.pipeline.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    if sys.argv[1] == "help":
        with contextlib.suppress(SystemExit):
            main(["build", "--help"])
    else:
        assert main([sys.argv[1], "--manifest", "manifests/demo.yaml"]) == 0
print(sorted(m for m in ("matplotlib", "ray", "polars", "pandas", "scipy", "detect_secrets",
                         "huggingface_hub") if m in sys.modules))
"""


@pytest.mark.parametrize("command", ["help", "validate", "plan"])
def test_help_validate_and_plan_import_no_plot_ray_or_dataframe_library(command: str) -> None:
    """`build --help`, `validate` and `plan` answer without matplotlib, Ray, the
    dataframe libraries, detect-secrets or the Hub client (each ~0.1-1 s to import)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    out = subprocess.run([sys.executable, "-c", _IMPORTS_PROBE, command], cwd=REPO, env=env,
                         capture_output=True, text=True, check=True, timeout=300).stdout
    assert out.strip() == "[]", out


def test_the_command_collects_no_garbage_while_it_imports() -> None:
    """`lemur-data` holds the collector while a command imports (pipeline/heap.py): a
    full collection walked every imported object, ~0.1-0.2 s each, three per build."""
    probe = ("import atexit, gc, sys\n"
             "from lemur_data.pipeline.cli import run\n"
             "seen = []\n"
             "gc.callbacks.append(lambda phase, info: seen.append(phase == 'start'))\n"
             "atexit.register(lambda: print('collections', sum(seen), file=sys.stderr))\n"
             "sys.argv = ['lemur-data', 'validate', '--manifest', 'manifests/demo.yaml']\n"
             "run()\n")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "collections 0" in result.stderr, result.stderr



@pytest.mark.parametrize("command", [["inspect", "--run-dir"], ["index", "--run-dir"]])
def test_a_command_that_reads_a_whole_run_collects_again_once_imported(
        tmp_path: Path, command: list[str]) -> None:
    """The commands whose work grows with the run (the workbench, `index`, `push`,
    `launch`) turn the collector back on once imported: a run's worth of cycles is
    never left to pile up. Here on a run folder that does not exist (their error path
    runs after the imports too)."""
    probe = ("import atexit, gc, sys\n"
             "from lemur_data.pipeline.cli import run\n"
             "atexit.register(lambda: print('enabled', gc.isenabled(), file=sys.stderr))\n"
             f"sys.argv = ['lemur-data', *{command!r}, {str(tmp_path / 'none')!r}]\n"
             "run()\n")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0, result.stderr  # no run there
    assert "enabled True" in result.stderr, result.stderr

@pytest.mark.slow
def test_failed_run_exits_1_naming_the_file(tmp_path: Path) -> None:
    stack_parquet(tmp_path / "stack.parquet", stdlib_files("json"))
    manifest = {"name": "nocol", "sources": [
        {"name": "stack", "kind": "code", "columns": {"text": "body"},
         "reader": {"type": "parquet", "paths": ["stack.parquet"]}}]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    result = cli("build", "--manifest", str(tmp_path / "m.yaml"),
                 "--run-dir", str(tmp_path / "run"), "--progress", "none")
    assert result.returncode == 1
    assert "stack.parquet" in result.stderr and "'body'" in result.stderr


def test_unwritable_run_dir_exits_1(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    manifest = {"name": "x", "sources": [
        {"name": "j", "kind": "code", "reader": {"type": "tree", "root": str(STDLIB / "json")}}]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    result = cli("build", "--manifest", str(tmp_path / "m.yaml"),
                 "--run-dir", str(blocker / "run"), "--progress", "none")
    assert result.returncode == 1 and str(blocker) in result.stderr


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_is_byte_identical(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for package in ("email", "json", "http", "urllib", "logging", "xml"):
        shutil.copytree(STDLIB / package, tree / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(STDLIB / "json", tree / "copy" / "json",
                    ignore=shutil.ignore_patterns("__pycache__"))
    manifest = {"name": "kill", "seed": 5, "shard": {"max_docs": 4},
                "sources": [{"name": "tree", "kind": "code",
                             "reader": {"type": "tree", "root": str(tree)}}],
                "stages": [{"exact_dedup": {"partitions": 4}}]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    args = ["build", "--manifest", str(tmp_path / "m.yaml"), "--progress", "none"]

    clean = cli(*args, "--run-dir", str(tmp_path / "clean"))
    assert clean.returncode == 0, clean.stderr
    assert "WARNING" not in clean.stderr, clean.stderr  # e.g. Ray's token-auth notice

    killed_dir = tmp_path / "killed"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    process = subprocess.Popen([*CLI, *args, "--run-dir", str(killed_dir)], cwd=REPO, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    markers = killed_dir / "markers" / "01-ingest"
    while time.time() < deadline and len(list(markers.glob("*.json"))) < 3:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (killed_dir / "stats.json").exists(), "the run finished before the kill"

    resumed = cli(*args, "--run-dir", str(killed_dir))
    assert resumed.returncode == 0, resumed.stderr
    assert not list(killed_dir.rglob(".tmp-*"))  # the killed writes' temp files are gone
    assert digest(killed_dir) == digest(tmp_path / "clean")


def _in_session(sid: int) -> list:
    """The live processes of session `sid` (a process started with start_new_session)."""
    import psutil  # Ray's bundled copy: importable once ray is (conftest imports it)

    found = []
    for candidate in psutil.process_iter():
        try:
            if os.getsid(candidate.pid) == sid and candidate.status() != psutil.STATUS_ZOMBIE:
                found.append(candidate)
        except (OSError, psutil.Error):
            pass  # exited meanwhile
    return found


def _title(process) -> str:
    try:
        return " ".join(" ".join(process.cmdline()).split())  # setproctitle pads with spaces
    except Exception:  # psutil.Error: it exited meanwhile
        return f"pid {process.pid}"


@pytest.mark.slow
def test_sigkill_leaves_no_ray_process_behind(tmp_path: Path) -> None:
    """Issue 20: after a SIGKILL of the driver, Ray's dashboard and runtime-env agents
    lived on for 50-94 s; every process of its local Ray (its agents are now stand-ins,
    but the workers are Ray's) must be gone in seconds."""
    import psutil

    tree = tmp_path / "tree"
    for package in ("email", "json", "http", "urllib", "logging", "xml"):
        shutil.copytree(STDLIB / package, tree / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    manifest = {"name": "orphans", "shard": {"max_docs": 4},
                "sources": [{"name": "tree", "kind": "code",
                             "reader": {"type": "tree", "root": str(tree)}}],
                "stages": [{"exact_dedup": {"partitions": 4}}]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    # its own session: whatever it leaves behind is found (and cleaned up) by session id
    driver = subprocess.Popen([*CLI, "build", "--manifest", str(tmp_path / "m.yaml"),
                               "--progress", "none", "--run-dir", str(run)], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        markers = run / "markers" / "01-ingest"
        deadline = time.time() + 120
        while time.time() < deadline and not list(markers.glob("*.json")):
            time.sleep(0.02)
        ray_processes = psutil.Process(driver.pid).children(recursive=True)
        titles = " ".join(_title(p) for p in ray_processes)
        # the raylet's agents (pipeline/ray_agent.py's stand-ins for Ray's two) are up
        assert all(f"/pipeline/ray_agent.py {kind} " in titles
                   for kind in ("dashboard", "runtime_env")), titles
        driver.kill()
        driver.wait()
        killed = time.monotonic()
        assert not (run / "stats.json").exists(), "the run finished before the kill"
        _, alive = psutil.wait_procs(ray_processes, timeout=15)
        left = [p for p in _in_session(driver.pid) if p not in alive] + alive
        assert not left, (f"{time.monotonic() - killed:.1f} s after the kill: "
                          f"{[_title(p) for p in left]}")
    finally:
        driver.kill()
        for leftover in _in_session(driver.pid):
            leftover.kill()


@pytest.mark.slow
def test_plan_estimates_the_full_recipe_offline() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["HF_HUB_OFFLINE"] = "1"
    result = subprocess.run([*CLI, "plan", "--manifest", "manifests/lemur-90b.yaml",
                             "--cores-per-node", "32"], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "stack-python" in out and "size_hint 80.0 GB" in out
    recipe = yaml.safe_load((REPO / "manifests" / "lemur-90b.yaml").read_text())
    listed = [line.split()[0] for line in out.split("\nsources:\n")[1].split("\nsteps")[0]
              .splitlines() if line.startswith("  ")]
    assert listed[:len(recipe["sources"])] == [s["name"] for s in recipe["sources"]]
    validated = subprocess.run([*CLI, "validate", "--manifest", "manifests/lemur-90b.yaml"],
                               cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert validated.returncode == 0, validated.stderr
    assert all(f"- name: {s['name']}" in validated.stdout for s in recipe["sources"])
    for stage in ("langid", "quality", "syntax", "minhash", "decontaminate", "tokenize", "mix"):
        assert f"\n  {stage} " in out
    total = next(line for line in out.splitlines() if line.strip().startswith("total"))
    hours = float(total.split()[1].replace(",", ""))
    nodes = int(total.split("TB of disk: ")[1].split()[0])
    assert hours > 100
    assert nodes in (math.ceil((hours - 1) / (32 * 24)), math.ceil((hours + 1) / (32 * 24)))
    # the recipe reads only what its mixture needs: a small share of the web text, and
    # the cost of reading everything is shown beside it
    share = next(line for line in out.splitlines() if line.strip().startswith("refinedweb")
                 and "%" in line)
    assert float(share.split()[1].rstrip("%")) < 10
    every = next(line for line in out.splitlines() if "with read: all" in line)
    assert float(every.split("): ")[1].split()[0].replace(",", "")) > 5 * hours

    # a 0.1% sample of it: each unlisted source at 0.1% of its size_hint, and a mix of
    # 0.1% of total_tokens (not 90B tokens, 180 GB of shards, out of the sample)
    sampled = subprocess.run([*CLI, "plan", "--manifest", "manifests/lemur-90b.yaml",
                              "--sample", "0.001"], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=300)
    assert sampled.returncode == 0, sampled.stderr
    assert "stack-python             not listed, so not known yet (estimated as 0.1% of its " \
           "size_hint)" in sampled.stdout
    tokens = float(recipe['mixture']['total_tokens']) * 0.001  # YAML reads 90e9 as text
    assert f"mixture: {tokens:,.0f} tokens" in sampled.stdout
    mix = next(line.split() for line in sampled.stdout.splitlines()
               if line.startswith("  mix "))
    assert float(mix[3]) < 1  # disk GB: the full recipe's mix writes ~180


def test_bad_command_lines_get_messages_not_tracebacks(tmp_path: Path) -> None:
    demo = "manifests/demo.yaml"
    for workers, why in (("-2", "must be at least 1"), ("0", "must be at least 1"),
                         ("two", "is not a whole number")):
        result = cli("build", "--manifest", demo, "--workers", workers)
        assert result.returncode == 2 and why in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    folder = cli("validate", "--manifest", str(REPO / "manifests"))
    assert folder.returncode == 2 and "is a folder" in folder.stderr
    assert "Traceback" not in folder.stderr
    bad_id = cli("push", "--run-dir", str(tmp_path), "--repo-id", "not a repo id!!", "--dry-run")
    assert bad_id.returncode == 2 and "--repo-id" in bad_id.stderr
    assert "not a repo id!!" in bad_id.stderr and "Traceback" not in bad_id.stderr


def test_duplicate_yaml_keys_are_refused_with_their_key_path(tmp_path: Path) -> None:
    text = (REPO / "manifests" / "demo.yaml").read_text()
    assert "\nstages:\n" in text
    # a second `stages:` (YAML keeps the last one silently) and a reader key given twice
    doubled = text + "\nstages:\n  - pii: {}\n"
    doubled = doubled.replace('root: "{stdlib}"', 'root: "{stdlib}"\n      root: "{purelib}"', 1)
    (tmp_path / "dup.yaml").write_text(doubled)
    result = cli("validate", "--manifest", str(tmp_path / "dup.yaml"))
    assert result.returncode == 2
    assert "sources[0].reader.root: duplicate key" in result.stderr
    assert "  - stages: duplicate key (lines" in result.stderr


@pytest.mark.slow
def test_ctrl_c_says_how_to_resume_and_rerunning_resumes(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for package in ("email", "json", "http"):
        shutil.copytree(STDLIB / package, tree / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    manifest = {"name": "ctrlc", "shard": {"max_docs": 4},
                "sources": [{"name": "tree", "kind": "code",
                             "reader": {"type": "tree", "root": str(tree)}}],
                "stages": [{"exact_dedup": {"partitions": 4}}]}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(manifest))
    args = ["build", "--manifest", str(tmp_path / "m.yaml"), "--progress", "none",
            "--run-dir", str(tmp_path / "run")]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    process = subprocess.Popen([*CLI, *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    markers = tmp_path / "run" / "markers" / "01-ingest"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(markers.glob("*.json"))) < 2:
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "rerun the same command to resume" in " ".join(err.split())
    assert "Traceback" not in err
    done = len(list(markers.glob("*.json")))
    resumed = cli(*args)
    assert resumed.returncode == 0, resumed.stderr
    assert done >= 2 and (tmp_path / "run" / "stats.json").is_file()
