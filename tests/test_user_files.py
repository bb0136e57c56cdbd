"""Files the user names (manifest, tokenizer, benchmark file): regular files only, with a
size bound, and no YAML alias bomb. Each case here hung, or grew without bound, before."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lemur_data.stages.decontaminate.benchmarks import read_rows
from lemur_data.stages.tokenize.tokenizer import TokenizerConfig, load_tokenizer, package_file
from lemur_data.stages.user_file import UserFileError, read_user_file

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "lemur_data.pipeline.cli"]
# 9 levels of 9 aliases: 9^9 = 387 million strings once expanded, in 342 bytes.
BILLION_LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{b}: &{b} [{','.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True))


def _limited() -> None:  # without the fix /dev/zero fails on this bound, not on the machine
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def validate(manifest: Path | str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"COLUMNS": "400"}
    return subprocess.run([*CLI, "validate", "-m", str(manifest)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, preexec_fn=_limited)


def test_a_525_byte_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    assert len(BILLION_LAUGHS) < 525  # smaller than the bomb the probe used
    (tmp_path / "bomb.yaml").write_text(BILLION_LAUGHS)
    result = validate(tmp_path / "bomb.yaml")
    assert result.returncode == 2, result.stderr
    assert "aliases expand to more than 100000 values" in result.stderr


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").write_text("name: &n [x, *n]\n")
    result = validate(tmp_path / "loop.yaml")
    assert result.returncode == 2 and "cannot be recursive" in result.stderr, result.stderr


def test_a_few_aliases_still_load(tmp_path: Path) -> None:
    demo = (REPO / "manifests" / "demo.yaml").read_text()
    demo = demo.replace("license: PSF-2.0\n", "license: &psf PSF-2.0\n", 1)
    demo = demo.replace("license: PSF-2.0}", "license: *psf}", 1)
    assert "&psf" in demo and "*psf" in demo
    (tmp_path / "m.yaml").write_text(demo.replace("{manifest_dir}", str(REPO / "manifests")))
    result = validate(tmp_path / "m.yaml")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "fifo"])
def test_a_device_or_fifo_as_manifest_is_refused(tmp_path: Path, device: str) -> None:
    if device == "fifo":
        device = str(tmp_path / "m.yaml")
        os.mkfifo(device)
    result = validate(device)
    assert result.returncode == 2, result.stderr
    kind = "named pipe (FIFO)" if device.endswith("m.yaml") else "character device"
    assert f"the manifest is a {kind}, not a regular file" in result.stderr


def test_an_oversized_manifest_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("name: x\n" + "#" * (5 << 20) + "\n")
    result = validate(big)
    assert result.returncode == 2 and "larger than 4194304 bytes" in result.stderr


def _in_thread(call):  # a FIFO open without O_NONBLOCK never returns: fail, do not hang
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "reading the file hung"
    return outcome[0]


@pytest.mark.parametrize("key", ["file", "sentencepiece"])
def test_a_fifo_as_tokenizer_is_refused(tmp_path: Path, key: str) -> None:
    fifo = tmp_path / "tokenizer.model"
    os.mkfifo(fifo)
    error = _in_thread(lambda: load_tokenizer(TokenizerConfig(**{key: str(fifo)})))
    assert isinstance(error, UserFileError), error
    assert "is a named pipe (FIFO), not a regular file" in str(error)


def test_dev_zero_as_tokenizer_is_refused() -> None:
    code = ("from lemur_data.stages.tokenize.tokenizer import TokenizerConfig, load_tokenizer\n"
            "load_tokenizer(TokenizerConfig(sentencepiece='/dev/zero'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, preexec_fn=_limited)
    assert "UserFileError" in result.stderr and "character device" in result.stderr


def test_a_real_tokenizer_still_loads_through_the_helper(tmp_path: Path) -> None:
    model = tmp_path / "tok.model"
    shutil.copy(package_file("mistral_common:data/tokenizer.model.v1"), model)
    tokenizer = load_tokenizer(TokenizerConfig(sentencepiece=str(model)))
    assert tokenizer.vocab_size == 32000 and tokenizer.eos_id == 2


def test_a_file_growing_past_the_bound_while_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "grows.json"
    path.write_bytes(b"x" * 100)
    assert read_user_file(path, what="test", max_bytes=100) == b"x" * 100
    path.write_bytes(b"x" * 101)
    with pytest.raises(UserFileError, match="larger than 100 bytes"):
        read_user_file(path, what="test", max_bytes=100)


def test_a_fifo_as_benchmark_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "items.jsonl"
    os.mkfifo(fifo)
    error = _in_thread(lambda: read_rows(str(fifo)))
    assert isinstance(error, UserFileError) and "benchmark file is a named pipe" in str(error)
