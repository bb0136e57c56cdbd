"""The architecture the folders show: imports run pipeline -> stages -> filters only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FORBIDDEN = {"stages": ("lemur_data.pipeline",),
             "filters": ("lemur_data.pipeline", "lemur_data.stages")}


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_imports_point_one_way(folder: str) -> None:
    modules = sorted((REPO / folder).rglob("*.py"))
    assert len(modules) > 5
    wrong = [f"{p.relative_to(REPO)} imports {name}" for p in modules for name in _imports(p)
             if any(name == b or name.startswith(b + ".") for b in FORBIDDEN[folder])]
    assert wrong == []


def test_every_package_folder_is_installed() -> None:
    """A subpackage missing from pyproject's list would import in an editable checkout
    and be absent from a wheel."""
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {"lemur_data." + ".".join(p.parent.relative_to(REPO).parts)
             for top in ("pipeline", "stages", "filters")
             for p in (REPO / top).rglob("__init__.py")}
    assert found == listed


def test_type_checker_suppressions_name_a_rule_and_a_reason() -> None:
    """`# type: ignore` / `# pyright: ignore` in the type-checked packages names the rule
    and says why on the same line (`...ignore[reportX]  # why`)."""
    import re

    suppression = re.compile(r"#\s*(type|pyright):\s*ignore")
    explained = re.compile(r"#\s*(type|pyright):\s*ignore\[[\w, -]+\]\s*#\s*\w")
    modules = [p for folder in ("pipeline", "stages", "filters")
               for p in sorted((REPO / folder).rglob("*.py"))]
    assert len(modules) > 50
    bare = [f"{p.relative_to(REPO)}:{n}: {line.strip()}" for p in modules
            for n, line in enumerate(p.read_text().splitlines(), 1)
            if suppression.search(line) and not explained.search(line)]
    assert bare == []
    assert explained.search("x = f(y)  # pyright: ignore[reportArgumentType]  # validated")
    assert not explained.search("x = f(y)  # type: ignore[arg-type]")
