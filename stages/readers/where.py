"""`where:`: take only the rows of a source whose field has one of some values, e.g. one
part of files that mix several (SlimPajama's `meta.redpajama_set_name`).

    reader: {type: jsonl, paths: [...], where: {field: meta.redpajama_set_name,
                                                in: [RedPajamaArXiv]}}

Skipped rows are not the source's input: no document, no id, neither kept nor removed
(the dataset card prints the filter with the source). `field` is dotted for nested
JSON objects and parquet struct columns. Parquet pushes the filter down to the reader
(`pyarrow.dataset` expressions), so row groups whose statistics exclude the values are
not decoded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # pyarrow.dataset imports pandas: ~1 s more for every command
    import pyarrow.dataset as ds


class RowFilter(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True)

    field: str = Field(min_length=1)
    """The input field (`meta.redpajama_set_name`), before any `columns:` mapping."""
    values: list[str | int | bool] = Field(alias="in", min_length=1)
    """Rows whose field equals one of these are read; the others are skipped."""

    @property
    def parts(self) -> list[str]:
        return self.field.split(".")

    def describe(self) -> str:
        return f"{self.field} in {self.values}"

    def matches(self, record: dict[str, Any]) -> bool:
        """For readers of JSON records."""
        value: Any = record
        for part in self.parts:
            if not isinstance(value, dict):
                return False
            value = value.get(part)
        return value in self.values

    def expression(self) -> ds.Expression:
        """The filter as a pyarrow dataset expression (nested fields by path)."""
        parts = self.parts
        ref = pc.field(parts[0]) if len(parts) == 1 else pc.field(*parts)
        return ref.isin(pa.array(self.values))

    def mask(self, table: pa.Table) -> pa.Array:
        """Which rows of a table that holds the field (top-level or struct) pass."""
        column: Any = table.column(self.parts[0])
        for part in self.parts[1:]:
            column = pc.struct_field(column, part)
        return pc.fill_null(pc.is_in(column, pa.array(self.values)), False)

    def top_column(self) -> str:
        return self.parts[0]
