"""A real S3-compatible server on 127.0.0.1 for tests and benchmarks: moto's
`moto_server` (PyPI `moto[server]`), started as its own process, never in-process."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Credentials the test server accepts (it checks none); set in the environment only, so
# the reader finds them through boto3's usual chain, as it would real ones.
TEST_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing-key-id",
                    "AWS_SECRET_ACCESS_KEY": "testing-secret-key",
                    "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    process: subprocess.Popen[bytes]

    def client(self):  # noqa: ANN201 - boto3's client type is generated
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=TEST_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=TEST_CREDENTIALS["AWS_SECRET_ACCESS_KEY"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_command() -> list[str]:
    beside = Path(sys.executable).with_name("moto_server")
    found = str(beside) if beside.exists() else shutil.which("moto_server")
    if found is None:
        raise RuntimeError("moto_server not found: pip install -e '.[test]' (moto[server])")
    return [found]


@contextlib.contextmanager
def s3_server(log: Path) -> Iterator[S3Server]:
    """moto_server on a free loopback port until the block ends; its output goes to `log`."""
    port = _free_port()
    with open(log, "wb") as out:
        process = subprocess.Popen([*_server_command(), "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT,
                                   env={**os.environ, **TEST_CREDENTIALS})
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto_server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        yield S3Server(f"http://127.0.0.1:{port}", process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
