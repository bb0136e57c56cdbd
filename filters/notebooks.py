"""Jupyter notebooks as training text: a script in the notebook's language, or
StarCoder2's structured format. Pure functions, no I/O.

- `script`: jupytext writes the notebook as a script of its language (code cells
  as code, markdown cells as comments), as StarCoder's "Jupyter scripts" were made.
  Cell outputs and metadata never reach the text; jupytext's YAML header is off.
- `structured`: `<jupyter_start><jupyter_text>MD<jupyter_code>CODE<jupyter_output>OUT...`
  (StarCoder2's "Jupyter structured"): runs of cells of one kind are merged, only
  text outputs are kept (cut at a length), images and widgets are dropped, and a
  code run with no text output gets `<empty_output>`.

A text that is not a notebook nbformat reads and validates raises `InvalidNotebook`.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, cast

import jupytext
import nbformat
from jupytext.languages import _SCRIPT_EXTENSIONS
from nbformat.reader import NotJSONError
from nbformat.validator import ValidationError

from .langid.code import language_by_extension, language_by_name, stack_name

START, TEXT, CODE, OUTPUT, EMPTY = ("<jupyter_start>", "<jupyter_text>", "<jupyter_code>",
                                   "<jupyter_output>", "<empty_output>")
SPECIAL_TOKENS = (START, TEXT, CODE, OUTPUT, EMPTY)
_WIDGET_TYPES = ("application/vnd.jupyter.widget-view+json",
                 "application/vnd.jupyter.widget-state+json")

# Kernel names linguist has no alias for (linguist's own aliases resolve through
# go-enry: `python3`, `csharp`, `octave`, `q`, ...).
_KERNEL_ALIASES = {"ir": "R", "ipython": "Python", "ipython3": "Python", "c++11": "C++",
                   "c++14": "C++", "c++17": "C++", "c++20": "C++", "sagemath": "Sage",
                   "xcpp11": "C++", "xcpp14": "C++", "xcpp17": "C++"}


@cache
def _jupytext_extensions() -> dict[str, str]:
    """Linguist's name -> the extension jupytext writes that language with (the first
    of jupytext's list: `.py`, `.R`)."""
    found: dict[str, str] = {}
    for extension, spec in _SCRIPT_EXTENSIONS.items():
        name = language_by_name(spec["language"]) or language_by_extension(extension)
        if name:
            found.setdefault(name, extension)
    return found


class InvalidNotebook(ValueError):
    """The text is not a notebook that nbformat reads and validates."""


@dataclass(frozen=True)
class NotebookLanguage:
    name: str | None
    """The Stack's name of the notebook's language (Python, R, Julia, ...), None if unknown."""
    extension: str | None
    """The script extension jupytext writes it with, None if jupytext has no such language."""


def read_notebook(text: str) -> nbformat.NotebookNode:
    """Parse and validate a notebook of any nbformat version, as version 4.

    Done with nbformat's reader and validator directly, not `nbformat.reads`, which
    logs every invalid notebook at error level (a corpus has many)."""
    try:
        with warnings.catch_warnings():
            # nbformat warns while it normalises (missing cell ids, ...); the result
            # is validated below, so the warnings say nothing more.
            warnings.simplefilter("ignore")
            nb = nbformat.reader.reads(text)
            nb = nbformat.convert(nb, 4)
            nbformat.validate(nb)
    except NotJSONError as error:
        raise InvalidNotebook(f"not JSON: {str(error)[:200]}") from None
    except ValidationError as error:
        where = "/".join(str(p) for p in error.absolute_path) or "notebook"
        raise InvalidNotebook(f"schema: {where}: {error.message[:200]}") from None
    except (nbformat.reader.NotJSONError, ValueError, KeyError, TypeError, AttributeError,
            json.JSONDecodeError) as error:
        raise InvalidNotebook(f"{type(error).__name__}: {str(error)[:200]}") from None
    except RecursionError as error:  # JSON nested deeper than the parser or validator go
        raise InvalidNotebook(f"nested too deep: RecursionError ({str(error)[:120]})") from None
    return nb


def notebook_language(nb: nbformat.NotebookNode, default: str | None = None) -> NotebookLanguage:
    """The language from `metadata.language_info` (name, then file_extension), else from
    the kernelspec (language, then name), else `default` (old IPython notebooks carry no
    language at all), in The Stack's names as go-enry resolves them (`python3` -> Python,
    `q` -> q, `.kt` -> Kotlin, `wolfram language` -> Mathematica). `extension` is None
    where jupytext writes no script of the language (to_script then keeps the code cells
    only, see `to_code`)."""
    meta = nb.get("metadata", {})
    info = meta.get("language_info", {}) or {}
    kernel = meta.get("kernelspec", {}) or {}
    name: str | None = None
    extension = info.get("file_extension")
    for candidate in (info.get("name"), extension, kernel.get("language"), kernel.get("name")):
        if name is None and isinstance(candidate, str) and candidate.strip():
            if candidate is extension:
                dotted = candidate if candidate.startswith(".") else "." + candidate
                name = language_by_extension(dotted)
            else:
                name = _linguist_name(candidate)
    name = name or (stack_name(default) if default else None)
    return NotebookLanguage(name, _jupytext_extensions().get(name) if name else None)


def _linguist_name(kernel_language: str) -> str | None:
    key = kernel_language.strip().lower()
    if key in _KERNEL_ALIASES:
        return _KERNEL_ALIASES[key]
    found = language_by_name(key)
    if found:
        return found
    # kernel names such as "julia-1.9", "conda-env-x-py", "scala212", "python3.11"
    for prefix, language in (("python", "Python"), ("julia", "Julia"), ("scala", "Scala"),
                             ("java", "Java"), ("rust", "Rust"), ("go", "Go")):
        if key.startswith(prefix):
            return language
    if key.endswith("-py") or "python" in key:
        return "Python"
    return None


def to_code(nb: nbformat.NotebookNode) -> str:
    """The code cells of a notebook in a language jupytext writes no script of (Kotlin,
    Ruby, ...), one after another: without the language's comment marker the markdown
    cells cannot become comments, so they are left out."""
    code = [_source(c).strip("\n") for c in nb.cells if c.get("cell_type") == "code"]
    return "\n\n".join(c for c in code if c.strip()) + "\n"


def to_script(nb: nbformat.NotebookNode, extension: str,
              style: Literal["percent", "light"] = "percent", comment_magics: bool = True) -> str:
    """The notebook as a script of the language `extension` names (`.py`, `.jl`, ...).

    `comment_magics`: jupytext's default, `%matplotlib inline` becomes
    `# %matplotlib inline`, so the script parses as the language."""
    # a copy: the metadata below must not leak to the caller
    nb = cast(nbformat.NotebookNode, nbformat.from_dict(nb))
    nb.metadata["jupytext"] = {"notebook_metadata_filter": "-all",
                               "cell_metadata_filter": "-all",
                               "comment_magics": comment_magics}
    # nbformat admits cells of types from later versions; they have no source to write
    nb.cells = [c for c in nb.cells if c.get("cell_type") in ("code", "markdown", "raw")]
    for cell in nb.cells:
        cell.pop("outputs", None)  # jupytext drops them too; less to copy
        cell.pop("attachments", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = jupytext.writes(nb, fmt={"extension": extension, "format_name": style})
    return text if text.endswith("\n") else text + "\n"


def to_structured(nb: nbformat.NotebookNode, max_output_chars: int = 1000) -> str:
    """StarCoder2's structured notebook text (see the module docstring)."""
    parts = [START]
    runs = _runs(nb.cells)
    for kind, cells in runs:
        if kind == "code":
            parts += [CODE, "\n".join(_source(c) for c in cells), OUTPUT]
            outputs = "\n".join(filter(None, (_text_outputs(c) for c in cells)))
            if len(outputs) > max_output_chars:
                outputs = outputs[:max_output_chars]
            parts.append(outputs if outputs.strip() else EMPTY)
        else:
            parts += [TEXT, "\n\n".join(_source(c) for c in cells)]
    return "".join(parts)


def _runs(cells: list[Any]) -> list[tuple[str, list[Any]]]:
    """Consecutive cells of one kind (code, or text: markdown and raw), empty ones skipped."""
    runs: list[tuple[str, list[Any]]] = []
    for cell in cells:
        if not _source(cell).strip():
            continue
        kind = "code" if cell.get("cell_type") == "code" else "text"
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(cell)
        else:
            runs.append((kind, [cell]))
    return runs


def has_content(nb: nbformat.NotebookNode) -> bool:
    return any(_source(cell).strip() for cell in nb.cells)


def _source(cell: Any) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _text_outputs(cell: Any) -> str:
    """Streams, text/plain results (also beside an image: sympy's pretty print) and
    `ename: evalue` of errors; images, HTML, LaTeX and widgets are dropped."""
    texts: list[str] = []
    for output in cell.get("outputs", []) or []:
        kind = output.get("output_type")
        if kind == "stream":
            texts.append(_joined(output.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data") or {}
            # A widget's text/plain is its Python repr, not something the code printed.
            if any(m in _WIDGET_TYPES for m in data):
                continue
            plain = data.get("text/plain")
            if plain is not None:
                texts.append(_joined(plain))
        elif kind == "error":
            texts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    return "\n".join(t.rstrip("\n") for t in texts if t)


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)
