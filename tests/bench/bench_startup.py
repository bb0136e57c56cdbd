"""The fixed cost of a small build: its wall time less the time spent inside its tasks.

A ~1 MB build (a few standard-library packages through langid, quality, syntax, exact
and MinHash dedup, PII, tokenize and a mix) is run as a user runs it, `lemur-data build`
in a new process with one worker (so the tasks run one after the other and their wall
times add up), in two ways:

- fresh: the build starts its own local Ray and stops it;
- running Ray: a local Ray started beforehand (`ray start --head`, here on a port of
  its own, stopped at the end), joined with `--ray-address`: the way to iterate. Its
  first build starts the cluster's resident driver (pipeline/resident), which serves
  the builds after it with its workers warm;
- running Ray, own process: the same with `--no-resident`, each build a driver and a
  job of its own (what every build on a running Ray was before the resident driver).

    python -m tests.bench.bench_startup [--repeat 2] [--code OTHER_CHECKOUT] [--alternate]

`--code` runs another checkout of the repository (e.g. `git worktree add /tmp/before
<commit>`) in the same process layout, for a before/after table in one run.
`--alternate` (with `--code`): fresh-Ray builds only, the two checkouts in turn (which
goes first swapped every pair), `--repeat` pairs, then each one's median: on a machine
others load, a change of load then falls on both alike rather than on whichever ran
second.
Both checkouts' sources are compiled to bytecode first, as a user's installation has
them after its first run: Python writes none where PYTHONDONTWRITEBYTECODE is set (as
on these machines), and every process of every build then compiled them again.
fixed = wall - sum(timings.json task_seconds) (a checkout without task_seconds: its step
times, an upper bound on task time). `driver CPU s` is the CPU time of the `lemur-data`
process: for a build a resident driver served, the client's only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import yaml

STDLIB = Path(sysconfig.get_paths()["stdlib"])
REPO = Path(__file__).resolve().parents[2]  # this checkout: run it from the one installed
PACKAGES = ["json/*.py", "email/*.py", "email/*/*.py", "http/*.py", "urllib/*.py",
            "xml/dom/*.py"]


def manifest(folder: Path) -> Path:
    raw = {"name": "startup", "seed": 1, "shard": {"max_docs": 2000, "max_bytes": "8MB"},
           "sources": [{"name": "stdlib-part", "kind": "code",
                        "reader": {"type": "tree", "root": str(STDLIB), "include": PACKAGES}}],
           "stages": [{"langid": {"code": {"keep": None}}},
                      {"quality": {"code": {"preset": "starcoder2"}}}, {"syntax": {}},
                      {"exact_dedup": {}}, {"minhash": {"threshold": 0.7}}, {"pii": {}}],
           "tokenizer": {}, "mixture": {"total_tokens": 1e6, "weights": {"code": 1}}}
    path = folder / "startup.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def code_path(checkout: Path | None, folder: Path) -> dict[str, str]:
    """PYTHONPATH that makes `lemur_data` the given checkout (before the installed one)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    # this script's own Ray (its own port and temp dir, loopback only as a build's own
    # local Ray is: pipeline/local_ray.py): no token to find
    env["RAY_AUTH_MODE"] = "disabled"
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    if checkout is None:
        return env
    shim = folder / "shim" / "lemur_data"
    shim.mkdir(parents=True, exist_ok=True)
    for name in ("pipeline", "stages", "filters"):
        target = shim / name
        if not target.exists():
            target.symlink_to(checkout / name)
    env["PYTHONPATH"] = str(folder / "shim")
    return env


def build(path: Path, run: Path, env: dict[str, str], address: str | None,
          *extra: str) -> dict[str, float]:
    shutil.rmtree(run, ignore_errors=True)
    command = [sys.executable, "-m", "lemur_data.pipeline.cli", "build", "-m", str(path),
               "--run-dir", str(run), "--workers", "1", "--progress", "none", *extra]
    if address:
        command += ["--ray-address", address]
    before = os.times()
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - start
    after = os.times()
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: exit {result.returncode}\n"
                         f"{(result.stderr or result.stdout)[-3000:]}")
    timings = json.loads((run / "timings.json").read_text())
    tasks = sum((timings.get("task_seconds") or timings["steps"]).values())
    return {"wall": wall, "tasks": tasks, "fixed": wall - tasks,
            "driver_cpu": (after.children_user + after.children_system)
            - (before.children_user + before.children_system)}


def compile_sources(checkout: Path) -> None:
    """Bytecode for the checkout's pipeline/, stages/ and filters/ (see the docstring)."""
    folders = [str(checkout / name) for name in ("pipeline", "stages", "filters")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], check=True,
                   stdout=subprocess.DEVNULL)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_ray(env: dict[str, str], folder: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    ray = Path(sys.executable).with_name("ray")
    process = subprocess.Popen(
        [str(ray), "start", "--head", "--block", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", "--disable-usage-stats", "--node-ip-address=127.0.0.1",
         f"--temp-dir={tempfile.mkdtemp(prefix='ray-', dir='/tmp')}"],
        env={**env, "RAY_enable_metrics_collection": "0"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                time.sleep(2)  # the raylet comes up after the GCS
                return process, f"127.0.0.1:{port}"
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGTERM)
    raise SystemExit("ray start did not come up in 120 s")


def stop_ray(process: subprocess.Popen) -> None:
    """Only the Ray this script started: its `ray start --block` process group."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


def measure(label: str, checkout: Path | None, folder: Path, repeat: int) -> list[tuple]:
    path = manifest(folder)
    env = code_path(checkout, folder / label)
    # resident drivers of this run only (a short path: Unix sockets)
    env["LEMUR_DATA_RESIDENT_DIR"] = tempfile.mkdtemp(prefix="lr", dir="/tmp")
    rows = []
    for i in range(repeat):
        rows.append((label, "fresh Ray", i + 1, build(path, folder / "run", env, None)))
    process, address = start_ray(env, folder)
    try:
        for i in range(repeat + 1):
            rows.append((label, "running Ray", i + 1,
                         build(path, folder / "run", env, address)))
        if _knows_resident(checkout):
            for i in range(repeat):
                rows.append((label, "running, own", i + 1,
                             build(path, folder / "run", env, address, "--no-resident")))
    finally:
        stop_ray(process)  # its resident driver exits with it
        shutil.rmtree(env["LEMUR_DATA_RESIDENT_DIR"], ignore_errors=True)
    return rows


def _knows_resident(checkout: Path | None) -> bool:
    """A checkout older than the resident driver has no `--no-resident`: its running-Ray
    builds are all in their own process already."""
    return checkout is None or (checkout / "pipeline" / "resident").is_dir()


def alternate(checkout: Path, folder: Path, repeat: int) -> list[tuple]:
    """Fresh-Ray builds of `checkout` ("other") and of this code, in turn, the order
    swapped every pair (other, this; this, other; ...): an A/B of one setting with it
    always second gave 13 faster builds of 16 (median -0.12 s), and with it always
    first, 5 of 12 (-0.04 s)."""
    path = manifest(folder)
    envs = [("other", code_path(checkout, folder / "other")), ("this", code_path(None, folder))]
    rows = []
    for i in range(repeat):
        for label, env in envs if i % 2 == 0 else envs[::-1]:
            rows.append((label, "fresh Ray", i + 1, build(path, folder / "run", env, None)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--code", type=Path, help="another checkout to measure first")
    parser.add_argument("--alternate", action="store_true",
                        help="fresh-Ray builds only, the two checkouts in turn")
    args = parser.parse_args()
    if args.alternate and args.code is None:
        parser.error("--alternate needs --code")
    compile_sources(REPO)
    if args.code is not None:
        compile_sources(args.code.resolve())
    with tempfile.TemporaryDirectory(prefix="lemur-startup-") as tmp:
        folder = Path(tmp)
        rows = []
        if args.alternate:
            rows += alternate(args.code.resolve(), folder, args.repeat)
        else:
            if args.code is not None:
                rows += measure("other", args.code.resolve(), folder, args.repeat)
            rows += measure("this", None, folder, args.repeat)
    print(f"{'code':<6} {'mode':<12} {'run':>3} {'wall s':>7} {'tasks s':>8} {'fixed s':>8} "
          f"{'driver CPU s':>12}")
    for label, mode, number, r in rows:
        print(f"{label:<6} {mode:<12} {number:>3} {r['wall']:>7.2f} {r['tasks']:>8.2f} "
              f"{r['fixed']:>8.2f} {r['driver_cpu']:>12.2f}")
    for label in dict.fromkeys(row[0] for row in rows):
        for mode in dict.fromkeys(row[1] for row in rows):
            fixed = [r["fixed"] for lab, m, _, r in rows if lab == label and m == mode]
            if fixed:
                print(f"{label:<6} {mode:<12} median fixed {statistics.median(fixed):.2f} s")


if __name__ == "__main__":
    main()
