"""go-enry's file classes as code rules: vendored, generated, documentation, dotfile,
configuration, test.

Each rule asks go-enry's own function (`IsVendor`, `IsGenerated`, ...; filters/langid/
code.py), unless the source already says: The Stack v2's `is_vendor` and `is_generated`,
mapped to the `vendor` and `generated` columns, are go-enry's verdicts computed when the
dataset was built, and are used as they are. The reason is the rule's name
(`quality:vendored`); the detail names where the verdict came from (`go-enry IsVendor`,
`column vendor`).
"""

from __future__ import annotations

from ..langid.code import FILE_CLASSES, FileClass, in_class

RULES = tuple(kind.rule for kind in FILE_CLASSES)
"""The rules, in the order they are checked."""
COLUMNS = {"vendored": "vendor", "generated": "generated"}
"""Rule -> the document column a source may already fill with go-enry's verdict."""


def file_class(path: str | None, text: str, enabled: frozenset[str],
               known: dict[str, bool | None],
               by_name: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """(rule, detail) of the first enabled class the file belongs to, or None.

    `known` holds a source's own verdict per rule (None: the source does not say).
    The classes in `by_name` are asked with the file's name, not its path, as The Stack
    v2 computed `is_generated` and `is_vendor` (bigcode-project/the-stack-v2:
    get_unique_files.py keeps a path's last component, get_file_contents.py gives it
    to go-enry)."""
    for kind in FILE_CLASSES:
        if kind.rule not in enabled:
            continue
        said = known.get(kind.rule)
        if said is not None:
            if said:
                return kind.rule, f"column {COLUMNS[kind.rule]}"
            continue
        if not path:
            continue
        asked = path.replace("\\", "/").rsplit("/", 1)[-1] if kind.rule in by_name else path
        if _belongs(kind, asked, text):
            return kind.rule, f"go-enry {kind.go_name}"
    return None


def _belongs(kind: FileClass, path: str, text: str) -> bool:
    content = text[:65536].encode("utf-8", "replace") if kind.needs_content else b""
    return in_class(kind, path, content)
