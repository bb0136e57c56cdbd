"""Strings held by an importable Python object: a dict (key -> text) or a list.

The demo uses it for the prose every Python install ships
(`pydoc_data.topics:topics`, the help() topics).
"""

from __future__ import annotations

import importlib
from typing import Literal

import pyarrow as pa

from .common import (
    InputUnit,
    Reader,
    ReaderError,
    ReaderParams,
    RowCollector,
)


class PythonObjectParams(ReaderParams):
    type: Literal["python_object"]
    object: str
    """`module:attribute` of a dict of strings or a list of strings."""


class PythonObjectReader(Reader[PythonObjectParams]):
    Params = PythonObjectParams

    def _items(self) -> list[tuple[str, object]]:
        module_name, _, attribute = self.params.object.partition(":")
        try:
            value = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            raise ReaderError(f"{self.where}: reader.object "
                              f"{self.params.object!r} cannot be imported ({error})") from error
        if isinstance(value, dict):
            return sorted((str(k), v) for k, v in value.items())
        return [(str(i), v) for i, v in enumerate(value)]

    def plan(self, max_docs: int, max_bytes: int) -> list[InputUnit]:
        count = len(self._items())
        starts = range(0, count, max_docs)
        return [InputUnit(self.source.name, i, {"start": s, "count": min(max_docs, count - s)},
                          min(max_docs, count - s))
                for i, s in enumerate(starts)]

    def read(self, unit: InputUnit) -> pa.Table:
        rows = RowCollector(self.source)
        start, count = unit.payload["start"], unit.payload["count"]
        for key, value in self._items()[start:start + count]:
            path = f"{self.params.object}/{key}"
            if isinstance(value, str):
                rows.add(path, value, path=path)
            else:
                rows.add(path, repr(value)[:1000], "invalid_text_type",
                         f"{type(value).__name__} is not a string", path=path)
        return rows.table()
