"""Real Jupyter notebooks for the notebook tests: Debian's documentation packages and
the test notebooks of two PyPI sdists (nbconvert: outputs with PNG/JPEG/SVG, widgets,
errors, a Julia notebook; nbformat: invalid notebooks and every nbformat version).

Fetched once into the fixture cache, `${LEMUR_DATA_FIXTURES:-~/.cache/lemur-data/fixtures}`:
a Debian package extracted as it sits under / into `<cache>/<package>/` (the layout
tests/fixtures/fetch.py uses), an sdist unpacked into `<cache>/pypi-<name>-<version>/`.
Needs apt-get and pip reaching Debian and PyPI the first time; a failed fetch fails
the test with the command's error (never a skip).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

DEBIAN_NOTEBOOK_PACKAGES = ("python-nbconvert-doc", "python-ipywidgets-doc",
                            "python-notebook-doc", "python-nbsphinx-doc")
PYPI_NOTEBOOK_SDISTS = (("nbconvert", "7.17.2"), ("nbformat", "5.11.1"))


def fixture_cache() -> Path:
    return Path(os.environ.get("LEMUR_DATA_FIXTURES",
                               Path.home() / ".cache" / "lemur-data" / "fixtures"))


def debian_package(package: str) -> Path:
    """`<cache>/<package>/`: the package's files as they sit under /."""
    target = fixture_cache() / package
    if target.is_dir():
        return target
    with tempfile.TemporaryDirectory(dir=_made(fixture_cache())) as tmp:
        _run(["apt-get", "download", package], cwd=tmp)
        deb = next(Path(tmp).glob("*.deb"))
        _run(["dpkg", "-x", str(deb), str(Path(tmp) / "root")])
        os.replace(Path(tmp) / "root", target)  # atomic: a half extraction never shows
    return target


def pypi_sdist(name: str, version: str) -> Path:
    """`<cache>/pypi-<name>-<version>/`: the unpacked source distribution."""
    target = fixture_cache() / f"pypi-{name}-{version}"
    if target.is_dir():
        return target
    with tempfile.TemporaryDirectory(dir=_made(fixture_cache())) as tmp:
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
              "--quiet", "-d", tmp, f"{name}=={version}"])
        archive = next(Path(tmp).glob("*.tar.gz"))
        with tarfile.open(archive) as tar:
            tar.extractall(Path(tmp) / "root", filter="data")
        os.replace(Path(tmp) / "root", target)
    return target


def real_notebooks() -> list[Path]:
    """Every .ipynb of the packages above, sorted (about 150 files, 2 MB)."""
    roots = [debian_package(p) for p in DEBIAN_NOTEBOOK_PACKAGES]
    roots += [pypi_sdist(n, v) for n, v in PYPI_NOTEBOOK_SDISTS]
    return sorted(p for root in roots for p in root.rglob("*.ipynb") if p.is_file())


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _run(command: list[str], cwd: str | None = None) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): "
                           f"{done.stderr.strip()[-2000:]}")


if __name__ == "__main__":  # fetch ahead of a test run: python tests/notebook_fixtures.py
    found = real_notebooks()
    print(f"{len(found)} notebooks under {fixture_cache()}")
