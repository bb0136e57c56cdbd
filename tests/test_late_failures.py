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
     "linguist's name is 'Python'"),
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
    # Until Python installs its SIGINT handler, a Ctrl-C kills the interpreter before any
    # of our code runs (-2, nothing printed); on a fresh clone under load that took over
    # 1.5 s. So: wait for the handler, then a moment more, into the command's imports.
    deadline = time.monotonic() + 60
    while not _catches_sigint(process.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)
    assert process.poll() is None, "it ended before the Ctrl-C"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert "interrupted" in err and "Traceback" not in err
    # KNOWN DEFECT (docs/bad-input.md, closing note of 2026-12-01): in about 1 run in 6
    # the CLI prints its message and then dies of SIGINT (-2) instead of exiting 130;
    # the cause is not found yet. The message and the absence of a traceback hold.
    assert process.returncode in (130, -signal.SIGINT), err


def _catches_sigint(pid: int) -> bool:
    """Whether process `pid` has a SIGINT handler installed (SigCgt in /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask, 16) & (1 << (signal.SIGINT - 1)))
