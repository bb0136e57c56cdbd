"""Keep documents by licence: an SPDX allow-list, or a deny-list.

    - licenses: {allow: permissive}                  # or a list of SPDX ids
    - licenses: {deny: [GPL-3.0-only, AGPL-3.0-only], missing: drop}

The rules are in filters/licenses.py. Adds `license_class` (permissive,
no_license, non_permissive) to every document it sees; stats count by it.
Reasons: `license_not_allowed`, `license_denied`, `no_license`. Where the input gives
its own class (`license_type`, The Stack v2's `permissive` / `no_license`), that is
the class, and it decides `allow: permissive`.
"""

from __future__ import annotations

from typing import Literal

import pyarrow as pa

from ..filters import licenses as lic
from .base import DocumentStage, ShardContext, StageParams, StageResult


class LicensesParams(StageParams):
    allow: list[str] | Literal["permissive"] | None = None
    """SPDX ids to keep (any case), or `permissive` (filters/licenses.py's list); a
    document is kept if one of its licence alternatives has only allowed ids.
    null: no allow-list."""
    deny: list[str] = []
    """SPDX ids to drop: a document whose every alternative has a denied id goes."""
    missing: Literal["keep", "drop"] = "keep"
    """Documents with no licence at all (null or empty)."""


class Licenses(DocumentStage[LicensesParams]):
    name = "licenses"
    about = (
        "keeps documents by licence: an SPDX allow-list (or `permissive`) "
        "or a deny-list")
    rate_mb_s = (1000.0, 1000.0)  # MB/s per core (code, text); docs/benchmarks.md
    Params = LicensesParams
    count_columns = ("license_class",)

    def added_columns(self) -> list[pa.Field]:
        return [pa.field("license_class", pa.string())]

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        p = self.params
        allow = (lic.PERMISSIVE if p.allow == "permissive"
                 else None if p.allow is None else frozenset(a.lower() for a in p.allow))
        deny = frozenset(d.lower() for d in p.deny)
        classes: list[str] = []
        reasons: list[str | None] = []
        # few distinct values per shard
        cache: dict[tuple[str | None, str | None], tuple[str, str | None]] = {}
        types = (docs.column("license_type").to_pylist() if "license_type" in docs.column_names
                 else [None] * docs.num_rows)
        for value, given in zip(docs.column("license").to_pylist(), types, strict=True):
            if (value, given) not in cache:
                cls = lic.class_of(value, given)
                reason = lic.check(value, allow, deny, p.missing)
                if given is not None and p.allow == "permissive" and reason in (
                        None, "license_not_allowed"):  # the dataset's own class stands
                    reason = "license_not_allowed" if cls == "non_permissive" else None
                cache[value, given] = (cls, reason)
            cls, reason = cache[value, given]
            classes.append(cls)
            reasons.append(reason)
        column = pa.array(classes, pa.string())
        if "license_class" in docs.column_names:
            table = docs.set_column(docs.schema.get_field_index("license_class"),
                                    "license_class", column)
        else:
            table = docs.append_column("license_class", column)
        return StageResult(table, pa.array(reasons, pa.string()))
