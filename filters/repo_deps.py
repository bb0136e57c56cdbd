"""Which files of a repository a file imports, and DeepSeek-Coder's dependency order.

Imports and includes are read with one regex per language (no parser: the order
only needs the edges) and resolved against the repository's own files; imports
of anything outside the repository are ignored. Languages: Python, Java, C#,
C, C++, JavaScript/TypeScript and Go.

Order (`dependency_order`): repeatedly take the file with the fewest dependencies
not yet taken (ties: the smaller path), so a file comes after what it imports
wherever there is no cycle, and a cycle is broken where it costs least.
"""

from __future__ import annotations

import heapq
import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar

_PY_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([\w ,\t*]+)|import[ \t]+([\w., \t]+))",
    re.MULTILINE)
_JAVA_IMPORT = re.compile(r"^[ \t]*import[ \t]+(?:static[ \t]+)?([\w.]+)(?:\.\*)?[ \t]*;",
                          re.MULTILINE)
_CS_USING = re.compile(r"^[ \t]*using[ \t]+(?:static[ \t]+)?([\w.]+)[ \t]*;", re.MULTILINE)
_C_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)
_JS_IMPORT = re.compile(r"(?:\bfrom[ \t]*|\bimport[ \t]*\(?[ \t]*|\brequire[ \t]*\([ \t]*)"
                        r"""['"](\.{1,2}/[^'"\n]*)['"]""")
_GO_IMPORT_BLOCK = re.compile(r"^import[ \t]*\(([^)]*)\)", re.MULTILINE)
_GO_IMPORT_LINE = re.compile(r'^import[ \t]+(?:\w+[ \t]+)?"([^"]+)"', re.MULTILINE)
_GO_PATH = re.compile(r'"([^"]+)"')

_JS_EXTENSIONS = ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts", "/index.ts",
                  "/index.tsx", "/index.js", "/index.jsx")
_FAMILY = {"Python": "python", "Cython": "python", "Java": "java", "C#": "csharp",
           "C": "c", "C++": "c", "CUDA": "c", "JavaScript": "js", "TypeScript": "js",
           "TSX": "js", "Go": "go"}


class RepoIndex:
    """The repository's files, indexed for resolving imports to paths."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = set(paths)
        self.modules: dict[str, str] = {}  # python dotted name (and its suffixes) -> path
        self.java: dict[str, str] = {}  # dotted class name suffixes -> path
        self.dirs: dict[str, list[str]] = defaultdict(list)  # folder -> files in it
        self.by_name: dict[str, list[str]] = defaultdict(list)  # path suffixes -> paths
        self.dir_suffixes: dict[str, list[str]] = defaultdict(list)  # folder tails -> folders
        for path in sorted(paths):
            folder = posixpath.dirname(path)
            if folder not in self.dirs:
                pieces = folder.split("/")
                for i in range(len(pieces)):
                    self.dir_suffixes["/".join(pieces[i:])].append(folder)
            self.dirs[folder].append(path)
            parts = path.split("/")
            for i in range(len(parts)):
                self.by_name["/".join(parts[i:])].append(path)
            stem, ext = posixpath.splitext(path)
            if ext in (".py", ".pyi", ".pyx"):
                dotted = stem.replace("/", ".")
                if dotted.endswith(".__init__"):
                    dotted = dotted[: -len(".__init__")]
                pieces = dotted.split(".")
                for i in range(len(pieces)):
                    self.modules.setdefault(".".join(pieces[i:]), path)
            elif ext == ".java":
                pieces = stem.split("/")
                for i in range(len(pieces)):
                    self.java.setdefault(".".join(pieces[i:]), path)


def _lines_with(text: str, word: str) -> list[str]:
    """The lines holding `word`. A literal search finds them ~10x faster than a
    multiline regex scans the text; the regexes then run on those lines only."""
    lines = []
    at = text.find(word)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        lines.append(text[start:end])
        at = text.find(word, end)
    return lines


def _matches(pattern: re.Pattern[str], text: str, word: str) -> list[Any]:
    """`pattern.findall` over the lines holding `word`: strings, or tuples of groups."""
    return [m for line in _lines_with(text, word) for m in pattern.findall(line)]


def dependencies(path: str, text: str, lang: str | None, index: RepoIndex) -> set[str]:
    """Paths of the repository's files that `path` imports (never itself)."""
    family = _FAMILY.get(lang or "")
    found: set[str] = set()
    if family == "python":
        found = _python(path, text, index)
    elif family == "java":
        for name in _matches(_JAVA_IMPORT, text, "import"):
            if name in index.java:
                found.add(index.java[name])
            else:  # `import a.b.*;`: every class of the package
                found |= {p for p in index.dirs.get(_suffix_dir(name.replace(".", "/"), index),
                                                    []) if p.endswith(".java")}
    elif family == "csharp":
        found = {p for ns in _matches(_CS_USING, text, "using")
                 for p in index.dirs.get(_suffix_dir(ns.replace(".", "/"), index), [])
                 if p.endswith(".cs")}
    elif family == "c":
        folder = posixpath.dirname(path)
        for name in _matches(_C_INCLUDE, text, "include"):
            local = posixpath.normpath(posixpath.join(folder, name))
            if local in index.paths:
                found.add(local)
            elif len(index.by_name.get(name, ())) == 1:  # unique anywhere in the repo
                found.add(index.by_name[name][0])
    elif family == "js":
        folder = posixpath.dirname(path)
        for spec in _matches(_JS_IMPORT, text, "./"):
            base = posixpath.normpath(posixpath.join(folder, spec))
            hit = next((base + e for e in _JS_EXTENSIONS if base + e in index.paths), None)
            if hit:
                found.add(hit)
    elif family == "go":
        specs = _GO_IMPORT_LINE.findall(text)
        for block in _GO_IMPORT_BLOCK.findall(text):
            specs += _GO_PATH.findall(block)
        for spec in specs:
            folder = _suffix_dir(spec, index)
            found |= {p for p in index.dirs.get(folder, []) if p.endswith(".go")
                      and not p.endswith("_test.go")}
    found.discard(path)
    return found


def _suffix_dir(spec: str, index: RepoIndex) -> str:
    """The one repository folder whose path ends with `spec` (a Go import path, a
    namespace), trying shorter tails of `spec`; "" matches nothing."""
    parts = spec.strip("/").split("/")
    for i in range(len(parts)):
        matches = index.dir_suffixes.get("/".join(parts[i:]), [])
        if len(matches) == 1:
            return matches[0]
        if matches:
            return ""  # ambiguous: no edge rather than a wrong one
    return ""


def _python(path: str, text: str, index: RepoIndex) -> set[str]:
    found: set[str] = set()
    package = posixpath.dirname(path).replace("/", ".")
    for source, names, plain in _matches(_PY_IMPORT, text, "import"):
        if plain:
            for item in plain.split(","):
                module = item.strip().split()[0] if item.strip() else ""
                hit = _module(module, index)
                if hit:
                    found.add(hit)
            continue
        if source.startswith("."):
            dots = len(source) - len(source.lstrip("."))
            base = package.split(".") if package else []
            base = base[: len(base) - (dots - 1)] if dots > 1 else base
            source = ".".join([*base, source.lstrip(".")]).strip(".")
        for name in names.replace("(", " ").split(","):
            name = name.strip().split()[0] if name.strip() else ""
            if name and name != "*":
                hit = _module(f"{source}.{name}" if source else name, index)
                if hit:
                    found.add(hit)
                    continue
            hit = _module(source, index)
            if hit:
                found.add(hit)
    return found


def _module(dotted: str, index: RepoIndex) -> str | None:
    return index.modules.get(dotted) if dotted else None


def dependency_order(paths: Sequence[str], deps: dict[str, set[str]]) -> list[str]:
    """DeepSeek-Coder's order: take the file with the fewest dependencies not yet taken
    (ties: the smaller path). Cycles are first collapsed into their strongly connected
    components, which go in topological order, so a file always comes after the files
    it imports unless they share a cycle; inside a cycle the fewest-first rule breaks it."""
    ordered = sorted(paths)
    position = {p: i for i, p in enumerate(ordered)}
    component = _strong_components(ordered, deps, position)
    members: dict[int, list[str]] = defaultdict(list)
    for path in ordered:
        members[component[path]].append(path)
    # The condensation: component -> components it depends on.
    needs: dict[int, set[int]] = defaultdict(set)
    for path in ordered:
        for dep in deps.get(path, ()):
            if dep in position and component[dep] != component[path]:
                needs[component[path]].add(component[dep])
    order: list[str] = []
    for comp in _fewest_first(sorted(members), needs, key=lambda c: members[c][0]):
        inside = {p: {d for d in deps.get(p, ()) if d in position and component[d] == comp}
                  for p in members[comp]}
        order += _fewest_first(members[comp], inside, key=lambda p: p)
    return order


N = TypeVar("N", int, str)  # a node of _fewest_first: a component or a path


def _fewest_first(nodes: Sequence[N], deps: Mapping[N, Collection[N]],
                  key: Callable[[N], str]) -> list[N]:
    """Repeatedly take the node with the fewest dependencies not yet taken (ties by key)."""
    remaining = {n: len(deps.get(n, ())) for n in nodes}
    dependents: dict[N, list[N]] = defaultdict(list)
    for node in nodes:
        for dep in deps.get(node, ()):
            dependents[dep].append(node)
    heap = [(count, key(node), node) for node, count in remaining.items()]
    heapq.heapify(heap)
    order: list[N] = []
    taken: set[N] = set()
    while heap:
        count, _, node = heapq.heappop(heap)
        if node in taken or count != remaining[node]:
            continue  # a stale entry: the node's count dropped since it was pushed
        taken.add(node)
        order.append(node)
        for dependent in dependents[node]:
            if dependent not in taken:
                remaining[dependent] -= 1
                heapq.heappush(heap, (remaining[dependent], key(dependent), dependent))
    return order


def _strong_components(paths: list[str], deps: dict[str, set[str]],
                       position: dict[str, int]) -> dict[str, int]:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    rows = [position[p] for p in paths for d in deps.get(p, ()) if d in position]
    cols = [position[d] for p in paths for d in deps.get(p, ()) if d in position]
    graph = coo_matrix(([1] * len(rows), (rows, cols)), shape=(len(paths), len(paths)))
    _, labels = connected_components(graph, directed=True, connection="strong")
    return {p: int(labels[position[p]]) for p in paths}
