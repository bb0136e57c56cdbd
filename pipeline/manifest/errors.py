"""`ManifestError`, and pydantic's validation errors as `key.path: message` lines."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ...stages.ingest import READERS


class ManifestError(Exception):
    """A manifest that cannot be used; each problem names its key path."""

    def __init__(self, where: str, problems: list[str]) -> None:
        self.where = where
        self.problems = problems
        super().__init__(f"{where}: invalid manifest\n" + "\n".join(f"  - {p}" for p in problems))


def describe(error: ValidationError, prefix: str = "") -> list[str]:
    """Pydantic errors as `key.path: message` lines."""
    lines = []
    for item in error.errors():
        path = prefix + _key_path(item["loc"])
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key"
        elif item["type"] == "missing":
            message = "required key is missing"
        elif item["type"] == "union_tag_invalid":
            expected = item.get("ctx", {}).get("expected_tags")
            message = f"unknown reader type; expected one of {expected}"
        elif item["type"] == "union_tag_not_found":
            message = f"reader needs a `type` key, one of: {', '.join(READERS)}"
        given = item.get("input")
        if item["type"] not in ("missing", "extra_forbidden") and not isinstance(given, dict):
            message += f" (got {_shown(given)})"
        lines.append(f"{path}: {message}")
    return lines


def _shown(value: Any) -> str:
    """A value as an error shows it: short (a 5,000-digit int cannot even be printed)."""
    if isinstance(value, int) and value.bit_length() > 256:
        return f"a number of {value.bit_length():,} bits"
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _key_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif i > 0 and loc[i - 1] == "reader" and part in READERS:
            continue  # pydantic's discriminator tag is not a key the user wrote
        else:
            out += ("." if out else "") + str(part)
    return out
