"""Jupyter notebooks become code (or StarCoder2's structured text) instead of raw JSON.

    - notebooks: {format: script}       # or structured

Which documents are notebooks: those whose `lang` is in `langs` (default
`Jupyter Notebook`, The Stack's name and the tree reader's for `.ipynb`) or whose
path ends in `.ipynb`; `sources`/`kinds` narrow it further. Other documents pass
untouched. The conversion itself is filters/notebooks.py.

- `script`: the notebook's code in its own language, markdown as comments
  (jupytext); `lang` becomes that language (Python, R, Julia, ...), so syntax and
  quality treat the document as code of that language.
- `structured`: `<jupyter_start><jupyter_text>...<jupyter_code>...<jupyter_output>...`;
  `lang` stays `Jupyter Notebook`.

Column `nb_language` says the notebook's language for every converted document.
Reasons: `invalid_notebook` (not JSON, or not valid nbformat; the detail says
where), `empty_notebook` (no cell with content), `unknown_language` (script only:
no language in the metadata and no `default_language`). A notebook in a language
jupytext writes no script of (Kotlin, Ruby, ...) keeps its language and its code
cells (`to_code`).
"""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from .base import DocumentStage, ShardContext, StageParams, StageResult


class NotebooksParams(StageParams):
    format: Literal["script", "structured"] = "script"
    """`script`: code in the notebook's language, markdown as comments; `structured`:
    StarCoder2's `<jupyter_start><jupyter_text>...` format with text outputs."""
    style: Literal["percent", "light"] = "percent"
    """script: jupytext's `percent` (`# %%` before each cell) or `light` style."""
    comment_magics: bool = True
    """script: `%magic` and `!shell` lines become comments, so the script parses."""
    max_output_chars: int = Field(1000, ge=0)
    """structured: text outputs of one code run are cut to this many characters."""
    default_language: str | None = "Python"
    """Language of notebooks whose metadata names none (old IPython notebooks); null
    removes them as `unknown_language` (script) or leaves `nb_language` null."""
    langs: list[str] | None = ["Jupyter Notebook"]
    """Documents with one of these `lang` values (any case) are notebooks, as are paths
    ending in `.ipynb`; null: every document in scope is a notebook."""


class Notebooks(DocumentStage[NotebooksParams]):
    name = "notebooks"
    about = (
        "Jupyter notebooks as scripts of their language (jupytext) or "
        "StarCoder2's structured text; outputs and images dropped")
    rate_mb_s = (6.0, 1000.0)  # MB/s per core (code, text); docs/benchmarks.md
    Params = NotebooksParams

    def added_columns(self) -> list[pa.Field]:
        return [pa.field("nb_language", pa.string())]

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        from ..filters import notebooks as nbf  # jupytext + nbformat: ~0.3 s import

        p = self.params
        selected = self._selected(docs)
        texts = docs.column("text").to_pylist()
        langs = docs.column("lang").to_pylist()
        nb_langs: list[str | None] = [None] * docs.num_rows
        reasons: list[str | None] = [None] * docs.num_rows
        details: list[str | None] = [None] * docs.num_rows
        for i, is_notebook in enumerate(selected):
            if not is_notebook:
                continue
            try:
                nb = nbf.read_notebook(texts[i])
            except nbf.InvalidNotebook as error:
                reasons[i], details[i] = "invalid_notebook", str(error)
                continue
            if not nbf.has_content(nb):
                reasons[i] = "empty_notebook"
                continue
            language = nbf.notebook_language(nb, p.default_language)
            nb_langs[i] = language.name
            try:  # nesting the validator let through can still be too deep to copy or write
                if p.format == "structured":
                    texts[i] = nbf.to_structured(nb, p.max_output_chars)
                elif language.name is None:
                    reasons[i], details[i] = "unknown_language", "no language"
                elif language.extension is None:  # a language jupytext writes no script of
                    texts[i], langs[i] = nbf.to_code(nb), language.name
                else:
                    texts[i] = nbf.to_script(nb, language.extension, p.style, p.comment_magics)
                    langs[i] = language.name
            except RecursionError as error:
                reasons[i] = "invalid_notebook"
                details[i] = f"nested too deep: RecursionError ({str(error)[:120]})"
        table = _replace(docs, "text", pa.array(texts, docs.schema.field("text").type))
        table = _replace(table, "lang", pa.array(langs, docs.schema.field("lang").type))
        table = _replace(table, "nb_language", pa.array(nb_langs, pa.string()))
        return StageResult(table, pa.array(reasons, pa.string()), pa.array(details, pa.string()))

    def _selected(self, docs: pa.Table) -> list[bool]:
        if self.params.langs is None:
            return [True] * docs.num_rows
        wanted = pa.array([lang.lower() for lang in self.params.langs])
        by_lang = pc.is_in(pc.utf8_lower(docs.column("lang")), wanted)
        by_path = pc.ends_with(pc.utf8_lower(docs.column("path")), ".ipynb")
        return pc.or_kleene(by_lang, by_path).fill_null(False).to_pylist()


def _replace(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    if name in table.column_names:
        index = table.schema.get_field_index(name)
        return table.set_column(index, table.schema.field(name).with_type(values.type), values)
    return table.append_column(pa.field(name, values.type), values)
