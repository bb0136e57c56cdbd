"""Shared fixtures: one real local Ray instance per test session, real input data."""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import ray
import yaml

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PURELIB = Path(sysconfig.get_paths()["purelib"])
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def ray_session():
    """A real local Ray with 2 CPUs, shared by every test that runs stages on Ray."""
    from lemur_data.pipeline.executor import connect

    os.environ.pop("RAY_ADDRESS", None)
    connect(workers=2)  # as `lemur-data build` starts it: same worker environment
    yield ray
    # left running until the interpreter exits: later tests reuse it


def write_manifest(folder: Path, manifest: dict[str, Any], name: str = "manifest.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


@pytest.fixture
def stdlib_tree(tmp_path: Path) -> Path:
    """A small real source tree: a copy of some standard-library packages."""
    import shutil

    root = tmp_path / "tree"
    for package in ("json", "email", "http", "urllib"):
        shutil.copytree(STDLIB / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return root


def run_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    return env
