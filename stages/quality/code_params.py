"""The quality stage's `code:` parameters: one optional key per code rule parameter
(the rule classes declare them), presets and per-language overrides resolved once per
language, and the `extension_table` file read for the rule."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from ...filters.langid.code import stack_name
from ...filters.quality import code_rules
from ..paths import LocalPath
from ..user_file import read_user_file


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _overrides_fields() -> dict[str, Any]:
    """One optional field per parameter of the code rules (filters/quality/code_rules/):
    the rule classes declare them, the manifest's keys follow."""
    def typed(name: str, kind: Any) -> Any:  # a file's name is resolved like other paths
        return LocalPath if code_rules.parameter_is_path(name) else kind

    return {name: (typed(name, kind) | None,
                   Field(None, description=code_rules.parameter_doc(name)))
            for name, (_, kind) in code_rules.PARAMETERS.items()}


class _CodeRuleOverridesBase(_Strict):
    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)

    @model_validator(mode="after")
    def _readable_extension_table(self) -> _CodeRuleOverridesBase:
        path = getattr(self, "extension_table", None)
        if path is not None:
            load_extension_table(path)  # ValueError: the file, row or column
        return self


EXTENSION_TABLE_MAX_BYTES = 64 * 2**20  # bigcode's own table is ~30 KB


def load_extension_table(path: str) -> code_rules.ExtensionTableRows:
    """The `extension_table` file, read here (a bounded regular file; filters do no I/O)
    and parsed by the rule's module. ValueError names the file, and the row or column.
    Read once per process while the file stays as it was (a resident driver and its
    workers outlive a build, and the file may be edited between builds)."""
    try:
        info = os.stat(path)
        stamp = (info.st_size, info.st_mtime_ns)
    except OSError:
        stamp = (-1, -1)  # the read below names the error
    return _load_extension_table(path, stamp)


@lru_cache(maxsize=8)
def _load_extension_table(path: str, stamp: tuple[int, int]) -> code_rules.ExtensionTableRows:
    try:
        raw = read_user_file(path, what="extension_table", max_bytes=EXTENSION_TABLE_MAX_BYTES)
    except OSError as e:
        raise ValueError(f"cannot read the extension table {path}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: the extension table is not UTF-8 (byte {e.start})") from None
    return code_rules.parse_extension_table(text, path)


def _loaded(changes: dict[str, Any]) -> dict[str, Any]:
    """Rule parameters as the rules take them: a table's file replaced by its rows."""
    table = changes.get("extension_table")
    return changes if table is None else {**changes, "extension_table": load_extension_table(table)}


# The fields come from the rule classes, so the overrides cannot drift from the rules.
CodeRuleOverrides = create_model(
    "CodeRuleOverrides", __base__=_CodeRuleOverridesBase,
    __doc__="Code rule parameters; a key left out keeps the preset's value, null turns "
            "the rule off.", **_overrides_fields())


class CodeQualityParams(CodeRuleOverrides):
    preset: Literal["starcoder2", "starcoder", "the-stack", "none"] = "starcoder2"
    """Where defaults and per-language exemptions come from (code_rules/presets.py)."""
    languages: dict[str, CodeRuleOverrides] = {}  # pyright: ignore[reportInvalidTypeForm]  # a created model
    """Per programming language overrides, applied last."""

    def changes(self) -> dict[str, Any]:
        return {k: v for k, v in super().changes().items() if k not in ("preset", "languages")}


class CodeThresholdTable:
    """Resolved rules per language, computed once per language."""

    def __init__(self, params: CodeQualityParams) -> None:
        preset = code_rules.CODE_PRESETS[params.preset]
        self._base = preset.default.updated(_loaded(params.changes()))
        # Keys and labels meet in The Stack's names, any case (`Wolfram Language` is
        # Mathematica's entry).
        self._preset_langs = {_key(k): v for k, v in preset.languages.items()}
        self._manifest_langs = {_key(k): _loaded(v.changes()) for k, v in params.languages.items()}
        self._resolved: dict[str, code_rules.CodeRules] = {}

    def get(self, lang: str | None) -> code_rules.CodeRules:
        key = _key(lang or "")
        if key not in self._resolved:
            value = self._base.updated(self._preset_langs.get(key, {}))
            self._resolved[key] = value.updated(self._manifest_langs.get(key, {}))
        return self._resolved[key]


def _key(language: str) -> str:
    return stack_name(language).lower()
