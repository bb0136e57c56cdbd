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


# Names the runner may use although they name a stage: the implicit stages are steps of
# the run's shape the planner itself adds (ingest reads the sources, tokenize and mix end
# the run), so pipeline/ composes them by name; the stages a manifest may list are never
# named there. A filter module imported from filters/ (pure functions: ingest's
# code-language detector in filters/langid/, the redaction of published examples in
# filters/pii/) is not the stage of that name.
IMPLICIT = {"ingest", "tokenize", "mix"}


def _names_and_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every identifier, attribute, import and string literal but
    docstrings and prose (comments are not in the tree). A string with a space is prose
    (help text, a message), which may mention a stage; a per-stage branch compares or
    builds a name, a key or a path, which has none."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr))
        elif isinstance(node, ast.arg):
            out.append((node.lineno, node.arg))
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").removeprefix("lemur_data.").startswith("filters."):
                continue  # a filter's module, not its stage
            out += [(node.lineno, node.module or "")] + [(node.lineno, a.name)
                                                         for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings and not any(c.isspace() for c in node.value):
            out.append((node.lineno, node.value))
    return out


def test_pipeline_names_no_stage() -> None:
    """The runner and the publisher call the stages' hooks (stages/hooks.py); a stage a
    manifest may list is never named in pipeline/: not in code, not as a key, name or
    path."""
    import re

    from lemur_data.stages.registry import STAGE_INFO, STAGES

    listed = set(STAGES)
    assert listed and set(STAGE_INFO) - listed == IMPLICIT
    word = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(listed)) + r")(?![A-Za-z0-9_])")
    found = []
    for path in sorted((REPO / "pipeline").rglob("*.py")):
        where = str(path.relative_to(REPO / "pipeline"))
        for line, text in _names_and_strings(path):
            found += [f"pipeline/{where}:{line}: {name} in {text[:60]!r}"
                      for name in word.findall(text)]
    assert found == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import that runs, at the top or inside a function (function-local imports
    count: they only defer a cycle); `if TYPE_CHECKING:` blocks never run."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for inner in node.orelse:
                visit(inner)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _graph() -> dict[str, list[tuple[str, str]]]:
    """module -> [(imported module, imported name)] inside pipeline/, stages/, filters/
    (names relative to the repo: `stages.minhash.buckets`)."""
    paths = {_module_name(p): p for top in ("pipeline", "stages", "filters")
             for p in (REPO / top).rglob("*.py")}
    graph: dict[str, list[tuple[str, str]]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges = []
        for node in _runtime_imports(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [(a.name.removeprefix("lemur_data."), "") for a in node.names]
            else:
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = (node.module or "").removeprefix("lemur_data.")
                targets = []
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.append((submodule, "") if submodule in paths
                                   else (source, alias.name))
            edges += [(t, name) for t, name in targets if t in paths]
        graph[module] = edges
    return graph


def test_no_private_name_is_imported_across_packages() -> None:
    """A `_name` is its module's own business: another package never imports it."""
    graph = _graph()
    assert len(graph) > 100
    wrong = [f"{module} imports {name} from {target}" for module, edges in graph.items()
             for target, name in edges if name.startswith("_") and not name.startswith("__")
             and target.rpartition(".")[0] != module.rpartition(".")[0]]
    assert wrong == []


def test_the_module_graph_has_no_cycle() -> None:
    """No import cycles, function-local imports included (they only hide one)."""
    from graphlib import CycleError, TopologicalSorter

    graph = _graph()
    sorter = TopologicalSorter({m: {t for t, _ in edges if t != m}
                                for m, edges in graph.items()})
    try:
        sorter.prepare()
    except CycleError as error:
        pytest.fail(f"import cycle: {' -> '.join(error.args[1])}")


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


def test_every_module_is_in_the_layout_of_development_md() -> None:
    """docs/development.md's Layout lists every module: a top-level module in its
    package's table, a subpackage's modules on the row of that folder (`minhash/`)."""
    text = (REPO / "docs" / "development.md").read_text()
    layout = text[text.index("## Layout"):text.index("## Tests")]
    sections = {}
    for top in ("pipeline", "stages", "filters"):
        start = layout.index(f"**`{top}/`**")
        end = min([layout.index(f"**`{o}/`**") for o in ("pipeline", "stages", "filters")
                   if layout.index(f"**`{o}/`**") > start] or [len(layout)])
        sections[top] = [line for line in layout[start:end].splitlines()
                         if line.startswith("| `") or line.startswith("| (")]
    missing = []
    for top, rows in sections.items():
        modules = sorted(p for p in (REPO / top).rglob("*.py") if p.name != "__init__.py")
        assert modules
        for path in modules:
            parts = path.relative_to(REPO / top).parts
            first = [r.split("|")[1].strip() for r in rows]
            if len(parts) == 1:  # not on a row that is only a subpackage's
                where = [r for r, f in zip(rows, first, strict=True)
                         if not (f.startswith("`") and f.endswith("/`") and "," not in f)]
            else:
                where = [r for r, f in zip(rows, first, strict=True) if f"`{parts[0]}/`" in f]
            if not any(f"`{parts[-1]}`" in row for row in where):
                missing.append(str(path.relative_to(REPO)))
    assert missing == []
