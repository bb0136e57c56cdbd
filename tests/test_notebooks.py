"""The notebooks stage on real notebooks (Debian's doc packages, nbconvert's and
nbformat's test notebooks; tests/fixtures/fetch.py fetches them once)."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lemur_data.filters.notebooks import (
    InvalidNotebook,
    notebook_language,
    read_notebook,
    to_script,
    to_structured,
)
from lemur_data.stages.base import ShardContext
from lemur_data.stages.notebooks import Notebooks, NotebooksParams
from lemur_data.stages.storage import documents_table
from tests.fixtures import fixture, real_notebooks

BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{76,}={0,2}")
CTX = ShardContext("0", "", 0)


@pytest.fixture(scope="module")
def notebooks() -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8")) for p in real_notebooks()]


def _raw_cells(text: str) -> list[dict]:
    """Cells straight from the JSON (v3 keeps them under worksheets, code in `input`)."""
    raw = json.loads(text)
    if "worksheets" in raw:
        return [dict(c, source=c.get("input", c.get("source", "")))
                for w in raw["worksheets"] for c in w.get("cells", [])]
    return raw.get("cells", [])


def _src(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _output_payloads(text: str) -> list[str]:
    """Every string in the cells' outputs that is not plain text (images, HTML, JSON)
    and that no cell's source holds too (`HTML("<b>..</b>")` shows its own argument)."""
    found: list[str] = []
    for cell in _raw_cells(text):
        for output in cell.get("outputs", []):
            for mime, value in (output.get("data") or {}).items():
                if mime != "text/plain":
                    found.append(value if isinstance(value, str) else
                                 "".join(value) if isinstance(value, list) else json.dumps(value))
            for key in ("png", "jpeg", "svg", "html"):  # nbformat 3 keeps them at the top
                if key in output:
                    found.append(_src({"source": output[key]}))
    sources = "\n".join(_src(c) for c in _raw_cells(text))
    return [f for f in found if len(f.strip()) >= 40 and f.strip() not in sources]


def test_real_notebooks_cover_the_cases(notebooks) -> None:
    """The fixture set really has what the other tests claim to check."""
    texts = [t for _, t in notebooks]
    assert len(notebooks) >= 70
    assert sum(bool(BASE64_RUN.search(t)) for t in texts) >= 5  # embedded images
    assert sum("application/vnd.jupyter.widget" in t for t in texts) >= 1
    assert sum('"nbformat": 3' in t for t in texts) >= 2
    invalid = 0
    for _, text in notebooks:
        try:
            read_notebook(text)
        except InvalidNotebook:
            invalid += 1
    assert 3 <= invalid <= 10


def test_script_keeps_every_code_cell_in_order_and_no_output(notebooks) -> None:
    converted = 0
    for path, text in notebooks:
        try:
            nb = read_notebook(text)
        except InvalidNotebook:
            continue
        language = notebook_language(nb, "Python")
        assert language.extension is not None, path
        script = to_script(nb, language.extension)
        position = 0
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            for n, line in enumerate(cell.source.splitlines()):
                if not line.strip() or (n == 0 and line.startswith("%%")):
                    continue  # a cell magic becomes the cell's header: `# %% language="js"`
                # jupytext comments out magics and shell escapes (`%time` -> `# %time`)
                found = line
                at = script.find(found, position)
                if at < 0:
                    found = "# " + line.lstrip()
                    at = script.find(found, position)
                assert at >= 0, f"{path}: line {line!r} missing or out of order"
                position = at + len(found)
        assert '"cell_type"' not in script or any('"cell_type"' in _src(c) for c in nb.cells)
        assert '"output_type"' not in script or any('"output_type"' in _src(c) for c in nb.cells)
        for payload in _output_payloads(text):
            assert payload not in script, f"{path}: an output reached the script"
        if language.name == "Python" and "%" not in script and "!" not in script:
            ast.parse(script)  # plain Python notebooks give a script that parses
        converted += 1
    assert converted >= 65


def test_structured_drops_images_widgets_and_json(notebooks) -> None:
    converted = with_output = 0
    for path, text in notebooks:
        try:
            nb = read_notebook(text)
        except InvalidNotebook:
            continue
        out = to_structured(nb, max_output_chars=300)
        assert out.startswith("<jupyter_start>")
        assert '"cell_type"' not in out or any('"cell_type"' in _src(c) for c in nb.cells)
        for payload in _output_payloads(text):
            assert payload[:200] not in out, f"{path}: an output payload reached the text"
        assert not BASE64_RUN.search(out) or any(BASE64_RUN.search(_src(c)) for c in nb.cells)
        # every <jupyter_code> is followed by exactly one <jupyter_output>
        tags = re.findall(r"<jupyter_(?:code|output|text)>", out)
        assert all(b == "<jupyter_output>" for a, b in zip(tags, tags[1:], strict=False)
                   if a == "<jupyter_code>")
        for chunk in out.split("<jupyter_output>")[1:]:
            body = chunk.split("<jupyter_")[0]
            assert len(body) <= 300 or body.startswith("<empty_output>")
        with_output += "<jupyter_output><empty_output>" not in out and "<jupyter_output>" in out
        converted += 1
    assert converted >= 65 and with_output >= 3


def test_structured_matches_hand_checked_notebook() -> None:
    """nbconvert's notebook1.ipynb, written out by hand from its JSON: the markdown runs
    merge with a blank line, the three consecutive code cells merge with their outputs
    (sympy's text/plain beside each PNG), the trailing empty cell is skipped."""
    path = fixture("nbconvert") / "nbconvert-7.17.2/tests/files/notebook1.ipynb"
    expected = (
        "<jupyter_start><jupyter_text># A simple SymPy example\n\n"
        "First we import SymPy and initialize printing:"
        "<jupyter_code>from sympy import *\nfrom sympy import init_printing\n\ninit_printing()"
        "<jupyter_output><empty_output>"
        "<jupyter_text>Create a few symbols:"
        "<jupyter_code>x, y, z = symbols(\"x y z\")<jupyter_output><empty_output>"
        "<jupyter_text>Here is a basic expression:"
        "<jupyter_code>e = x**2 + 2.0 * y + sin(z)\ne\ndiff(e, x)\nintegrate(e, z)"
        "<jupyter_output> 2                 \nx  + 2.0⋅y + sin(z)\n2⋅x\n"
        " 2                     \nx ⋅z + 2.0⋅y⋅z - cos(z)")
    assert to_structured(read_notebook(path.read_text())) == expected
    short = to_structured(read_notebook(path.read_text()), max_output_chars=10)
    assert short.endswith("<jupyter_output> 2        ")


def test_language_from_metadata(notebooks) -> None:
    by_name = {p.name: t for p, t in notebooks}
    julia = read_notebook(by_name["notebook_jl.ipynb"])
    assert notebook_language(julia).name == "Julia"
    script = to_script(julia, notebook_language(julia).extension)
    assert "function foobar(x)" in script and script.startswith("# %%")
    # no metadata at all: only the default names a language
    bare = read_notebook(by_name["notebook1.ipynb"])
    assert notebook_language(bare).name is None
    assert notebook_language(bare, "Python").extension == ".py"
    counts = Counter(notebook_language(read_notebook(t), None).name for _, t in notebooks
                     if _valid(t))
    assert counts["Python"] >= 40


def _valid(text: str) -> bool:
    try:
        read_notebook(text)
    except InvalidNotebook:
        return False
    return True


def test_stage_converts_notebooks_and_quarantines_invalid(notebooks) -> None:
    """Real notebooks, nbformat's invalid ones, a cut copy of a real notebook, and a
    Python file that must pass untouched."""
    good = [(p, t) for p, t in notebooks if _valid(t)][:20]
    bad = [(p, t) for p, t in notebooks if not _valid(t)]
    cut_path, cut_text = good[0]
    python_file = Path(ast.__file__)
    rows = [{"id": str(i), "text": t, "source": "s", "kind": "code", "lang": "Jupyter Notebook",
             "path": str(p)} for i, (p, t) in enumerate(good + bad)]
    rows.append({"id": "cut", "text": cut_text[: len(cut_text) // 2], "source": "s",
                 "kind": "code", "lang": "Jupyter Notebook", "path": str(cut_path)})
    rows.append({"id": "py", "text": python_file.read_text(), "source": "s", "kind": "code",
                 "lang": "Python", "path": str(python_file)})
    docs = documents_table(rows)
    result = Notebooks(NotebooksParams()).apply(docs, CTX)
    reasons = result.reasons.to_pylist()
    details = result.details.to_pylist()
    assert reasons[: len(good)] == [None] * len(good)
    assert set(reasons[len(good): -1]) == {"invalid_notebook"}
    assert details[-2].startswith("not JSON")
    assert all(d and ("schema" in d or "JSON" in d) for d in details[len(good): -1])
    table = result.table
    assert table.column("lang").to_pylist()[: len(good)] == ["Python"] * len(good)
    assert table.column("nb_language").to_pylist()[-1] is None
    assert table.column("text")[-1].as_py() == python_file.read_text()
    assert table.column("lang")[-1].as_py() == "Python"
    assert table.schema.field("text").type == pa.large_string()
    structured = Notebooks(NotebooksParams(format="structured")).apply(docs, CTX).table
    assert structured.column("lang").to_pylist()[: len(good)] == ["Jupyter Notebook"] * len(good)
    assert all(t.startswith("<jupyter_start>")
               for t in structured.column("text").to_pylist()[: len(good)])


@pytest.mark.slow
def test_build_on_a_stack_layout_parquet(ray_session, tmp_path: Path, notebooks) -> None:
    """A parquet laid out like The Stack's jupyter-notebook folder, through a build:
    notebooks -> syntax; the converted scripts reach syntax as Python."""
    from tests.runs import removed_reasons, run_build

    table = pa.table({
        "content": [t for _, t in notebooks],
        "max_stars_repo_path": [p.name for p, _ in notebooks],
        "max_stars_repo_name": [p.parent.name for p, _ in notebooks],
        "max_stars_count": list(range(len(notebooks))),
        "max_stars_repo_licenses": [["BSD-3-Clause"]] * len(notebooks),
    })
    pq.write_table(table, tmp_path / "jupyter.parquet", row_group_size=32)
    manifest = {"name": "nb", "shard": {"max_docs": 40},
                "sources": [{"name": "stack-jupyter", "kind": "code",
                             "reader": {"type": "parquet",
                                        "paths": [str(tmp_path / "jupyter.parquet")]},
                             "columns": {"text": "content", "path": "max_stars_repo_path",
                                         "repo": "max_stars_repo_name",
                                         "stars": "max_stars_count",
                                         "license": "max_stars_repo_licenses"},
                             "lang": "Jupyter Notebook"}],
                "stages": [{"notebooks": {"format": "script"}}, {"syntax": {}}]}
    run = tmp_path / "run"
    run_build(manifest, tmp_path, run)
    stats = json.loads((run / "stats.json").read_text())
    out = pq.read_table(run / stats["output"]["dir"])
    reasons = Counter(removed_reasons(run))
    invalid = sum(not _valid(t) for _, t in notebooks)
    assert reasons["notebooks:invalid_notebook"] == invalid
    assert out.num_rows + sum(reasons.values()) == len(notebooks)
    assert set(out.column("lang").to_pylist()) <= {"Python", "Julia"}
    assert out.num_rows >= 40  # most scripts parse as Python
    for text in out.column("text").to_pylist():
        assert '"cell_type"' not in text and not BASE64_RUN.search(text)


def test_a_language_without_a_jupytext_script_keeps_its_language(notebooks) -> None:
    """Kotlin and q kernels name their language in The Stack's names through go-enry; jupytext
    writes no Kotlin script, so the notebook keeps its code cells and its language instead of
    being dropped as unknown_language. (The real Julia notebook, its kernel renamed.)"""
    text = dict((p.name, t) for p, t in notebooks)["notebook_jl.ipynb"]
    raw = json.loads(text)
    rows = []
    kernels = (("kotlin", "kotlin"), ("q", "q"),
               # languages linguist renamed: The Stack's names (langid's "Names")
               ("wolframlanguage12", "Wolfram Language"), ("coq", "coq"))
    for i, (kernel, language) in enumerate(kernels):
        raw["metadata"]["kernelspec"] = {"name": kernel, "language": language,
                                         "display_name": kernel}
        raw["metadata"]["language_info"] = {"name": language}
        rows.append({"id": str(i), "text": json.dumps(raw), "source": "s", "kind": "code",
                     "lang": "Jupyter Notebook", "path": f"n{i}.ipynb"})
    result = Notebooks(NotebooksParams()).apply(documents_table(rows), CTX)
    assert result.reasons.to_pylist() == [None] * 4
    assert result.table.column("lang").to_pylist() == ["Kotlin", "q", "Mathematica", "Coq"]
    kotlin = result.table.column("text")[0].as_py()
    assert "function foobar(x)" in kotlin and "# %%" not in kotlin
    assert result.table.column("text")[1].as_py().startswith("/ %%")  # jupytext writes q


@pytest.mark.parametrize("depth", [700, 100_000])
def test_a_notebook_nested_too_deep_is_quarantined_alone(notebooks, depth: int) -> None:
    """A real notebook with a metadata value nested `depth` lists deep: too deep for the
    JSON parser (100,000), or parsed but too deep for nbformat's validator and copies
    (700). Each is `invalid_notebook` naming the cause; the real notebook next to it is
    converted, and the task never sees a RecursionError."""
    path, text = next((p, t) for p, t in notebooks if _valid(t) and '"nbformat": 4' in t)
    raw = json.loads(text)
    raw["metadata"] = {**raw.get("metadata", {}), "deep": "DEEP"}
    deep = json.dumps(raw).replace('"DEEP"', "[" * depth + "]" * depth)
    docs = documents_table([{"id": str(i), "text": t, "source": "s", "kind": "code",
                             "lang": "Jupyter Notebook", "path": str(path)}
                            for i, t in enumerate([deep, text])])
    for fmt in ("script", "structured"):
        result = Notebooks(NotebooksParams(format=fmt)).apply(docs, CTX)
        assert result.reasons.to_pylist() == ["invalid_notebook", None], fmt
        assert result.details[0].as_py().startswith("nested too deep: RecursionError")
