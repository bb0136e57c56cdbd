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


DEMO_SAMPLE = 0.1
"""The workbench tests' demo: a seeded tenth of every source (`build --sample 0.1`)."""
DEMO_SEED = 5
"""The sample's seed. A tenth keeps both copies of a near-duplicate pair with chance
1/100: with the demo's own seed (1234) none of the standard library's 13 MinHash
clusters keeps two members, with 5 three do (the standard library is the same on every
machine of the project, site-packages is not), so `explain` has near duplicates."""


def demo_manifest(sample: float | int | None = DEMO_SAMPLE, edit: Any = None) -> Any:
    """manifests/demo.yaml (read from beside it, as `build -m` reads it) with `sample`, and
    `edit(raw)` applied to its YAML first (e.g. one threshold changed)."""
    from lemur_data.pipeline.manifest import parse_manifest

    raw = yaml.safe_load((REPO / "manifests" / "demo.yaml").read_text())
    if edit is not None:
        edit(raw)
    if sample is not None:
        raw["sample"] = sample
        raw["seed"] = DEMO_SEED
    return parse_manifest(raw, "manifests/demo.yaml", REPO / "manifests")


@pytest.fixture(scope="session")
def demo_sample(ray_session: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build of the demo's 10% sample per test session, shared by the workbench tests
    (inspect, explain, diff, the report's examples) and the sample's own test."""
    from lemur_data.pipeline.build import build

    run = tmp_path_factory.mktemp("workbench") / "demo-sample"
    build(demo_manifest(), str(run), workers=2, progress="none")
    return run


VARIANT_MAX_LINE = 100
"""The other demo sample `diff` compares: quality's code max_line_length 1000 -> 100."""


def _shorter_lines(raw: dict[str, Any]) -> None:
    for entry in raw["stages"]:
        if "quality" in entry:
            entry["quality"]["code"]["max_line_length"] = VARIANT_MAX_LINE


@pytest.fixture(scope="session")
def demo_sample_variant(demo_sample: Path) -> Path:
    """The demo's sample again with one threshold changed (quality's code
    max_line_length), beside `demo_sample`: what `diff` compares."""
    from lemur_data.pipeline.build import build

    run = demo_sample.parent / "demo-sample-max-line"
    build(demo_manifest(edit=_shorter_lines), str(run), workers=2, progress="none")
    return run
