"""Manifests and command lines that used to pass `validate` and then fail late, hang or
end in a traceback (issue 32): each is refused up front, naming its key or option."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from lemur_data.pipeline.manifest import ManifestError, parse_manifest
from lemur_data.stages.mix.plan import MAX_EPOCHS, plan_components
from tests.test_cli import CLI, REPO, cli

DEMO = yaml.safe_load((REPO / "manifests" / "demo.yaml").read_text())


def _problems(change: Any) -> str:
    raw = copy.deepcopy(DEMO)
    change(raw)
    with pytest.raises(ManifestError) as error:
        parse_manifest(raw, "demo.yaml", REPO / "manifests")
    return str(error.value)


def test_the_demo_still_validates() -> None:
    parse_manifest(copy.deepcopy(DEMO), "demo.yaml", REPO / "manifests")


@pytest.mark.parametrize("change, expected", [
    (lambda m: m["mixture"].update(total_tokens=1e30), "mixture.total_tokens"),
    (lambda m: m["mixture"]["weights"].update(code=float("inf")),
     "mixture.weights.code: inf is not a finite number"),
    (lambda m: m["mixture"]["weights"].update(text=float("nan")),
     "mixture.weights.text: nan is not a finite number"),
    (lambda m: m["stages"].append({"quality": {"max_line_length": float("inf")}}),
     "is not a finite number"),
    (lambda m: m.update(shard={"max_bytes": 0}), "shard.max_bytes: Value error, must be more"),
    (lambda m: m["sources"][0].update(max_doc_bytes=0),
     "max_doc_bytes: Value error, must be more than 0"),
    (lambda m: m.update(seed=10**5000), "seed: Input should be less than or equal to"),
    (lambda m: m.update(seed=-1), "seed: "),
    (lambda m: m.update(tokenizer={"file": "no/such/tokenizer.json"}),
     "manifests/no/such/tokenizer.json: no such file"),
    (lambda m: m.update(tokenizer={"sentencepiece": "."}), "manifests: is a folder"),
    (lambda m: m.update(tokenizer={"package": "mistral_common:no/such.model"}),
     "has no file 'no/such.model'"),
    (lambda m: m["mixture"]["weights"].update({"code:Pyhton": 1}),
     "mixture.weights.code:Pyhton: no code language 'Pyhton'"),
    (lambda m: m["mixture"]["weights"].update({"code:python": 1}),
     "The Stack's name is 'Python'"),
    (lambda m: m["mixture"]["weights"].update({"code:Rocq Prover": 1}),
     "The Stack's name is 'Coq'"),
    (lambda m: m["mixture"]["weights"].update({"code:C#": 1, "code:Csharp": 1}),
     "collide as file names"),
])
def test_manifests_that_failed_late_are_refused_by_validate(change: Any, expected: str) -> None:
    assert expected in _problems(change)


def test_a_build_refuses_them_before_any_task(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text((REPO / "manifests" / "demo.yaml").read_text().replace(
        '"code:Python": 6', '"code:Pyhton": 6'))
    result = cli("build", "-m", str(path), "--run-dir", str(tmp_path / "run"))
    assert result.returncode == 2, result.stderr
    assert "mixture.weights.code:Pyhton" in result.stderr
    assert not (tmp_path / "run").exists()


def test_a_target_of_endless_epochs_is_refused_in_the_plan() -> None:
    import numpy as np

    from lemur_data.stages.mix.params import Component

    tokens = np.array([[100, 50]], np.int64)
    with pytest.raises(ValueError, match=f"more than {MAX_EPOCHS:,}"):
        plan_components([Component("code", 1.0, "code")], tokens, np.ones_like(tokens), 1e14)


@pytest.mark.parametrize("args, expected", [
    (["plan", "-m", "manifests/demo.yaml", "--cores-per-node", "0"], "must be at least 1"),
    (["build", "-m", "manifests/demo.yaml", "--run-dir", ""], "--run-dir: is empty"),
    (["build", "-m", "manifests/demo.yaml", "--run-dir", "  "], "--run-dir: is empty"),
    (["launch", "-m", "manifests/demo.yaml", "--master-port", "99999"],
     "99999 is not a TCP port"),
    (["launch", "-m", "manifests/demo.yaml", "--node-rank", "-1"], "must be 0 or more"),
])
def test_bad_options_get_messages(args: list[str], expected: str) -> None:
    result = cli(*args)
    assert result.returncode == 2 and expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_5000_digit_seed_in_yaml_is_a_manifest_error(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text((REPO / "manifests" / "demo.yaml").read_text() + "\nseed: " + "9" * 5000
                    + "\n")
    result = cli("validate", "-m", str(path))
    assert result.returncode == 2 and "seed" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["build", "plan", "card", "index"])
def test_ctrl_c_while_starting_exits_130_without_a_traceback(command: str,
                                                             tmp_path: Path) -> None:
    """1.5 s in: past Python's own start, while the command imports what it needs (build,
    plan) or reads its run (card, index: a stats.json that is a FIFO blocks the read)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    os.mkfifo(tmp_path / "stats.json")
    args = {"build": ["build", "-m", "manifests/demo.yaml", "--progress", "none",
                      "--run-dir", str(tmp_path / "run")],
            "plan": ["plan", "-m", "manifests/demo.yaml"],
            "card": ["card", "--run-dir", str(tmp_path)],
            "index": ["index", "--run-dir", str(tmp_path)]}[command]
    process = subprocess.Popen([*CLI, *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    # A Ctrl-C before `main` runs is Python's own (a traceback of site or runpy, or -2):
    # on a fresh clone under load, Python's start alone took over 1.5 s. So: wait until the
    # command is inside `main`, importing what it needs (a library only `main` loads is
    # mapped: pydantic's core for the manifest, Arrow for a run folder), then a moment.
    deadline = time.monotonic() + 60
    while not _in_main(process.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert process.poll() is None, "it ended before the Ctrl-C"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert "interrupted" in err and "Traceback" not in err
    assert process.returncode == 130, err


def test_ctrl_c_inside_code_exec_runs_from_a_string_still_exits_130(tmp_path: Path) -> None:
    """The cause of the old 1-in-6 exit by SIGINT (-2): a Ctrl-C that lands while `exec`
    runs a string (dataclasses' generated methods, during an import) leaves CPython's
    "unhandled KeyboardInterrupt" mark set, and `python -m` then kills itself with
    SIGINT after exiting (any later such `exec`, e.g. of a first import of rich, clears
    it: so rich is imported first, as `_main` does before its heavy imports). Here the
    SIGINT lands there every time."""
    (tmp_path / "ctrl_c_in_exec.py").write_text(
        "import sys\n"
        "import rich.console\n"
        "from lemur_data.pipeline import cli\n"
        "def _main(argv):\n"
        "    exec('import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\n'\n"
        "         'while True: pass')\n"
        "cli._main = _main\n"
        "sys.exit(cli.main([]))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([CLI[0], "-m", "ctrl_c_in_exec"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.stderr.strip() == "interrupted", done.stderr
    assert done.returncode == 130, done.returncode


def _in_main(pid: int) -> bool:
    """Whether process `pid` (the CLI) has begun its command's imports inside `main`: the
    CLI module itself imports neither pydantic nor Arrow, every command here does."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
    return "_pydantic_core" in maps or "libarrow" in maps
