"""Ingest: turn one input unit into documents, quarantining what cannot be used.

Readers (stages/readers/) know their formats; this stage adds the checks every
document gets whatever its format: empty text, NUL bytes, oversize; and a code
document's language in The Stack's name, whatever gave it (a mapped column, `lang:`,
the tree reader's detection): `stack_name`, filters/langid/code.py.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Union

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from ..filters.langid.code import stack_name
from .hooks import StageHooks
from .readers.common import InputUnit, Reader, ReaderParams, SourceInfo, stamp
from .readers.files import FilesReader, TreeReader
from .readers.hf_dataset import HFDatasetReader
from .readers.jsonl import JsonlReader
from .readers.parquet import ParquetReader
from .readers.python_object import PythonObjectReader
from .readers.stack_v2 import StackV2Reader

# The one list of readers: a reader's manifest name is its Params' `type` literal.
_READER_CLASSES: tuple[type[Reader[Any]], ...] = (
    ParquetReader, JsonlReader, HFDatasetReader, TreeReader, FilesReader, PythonObjectReader,
    StackV2Reader)
READERS: dict[str, type[Reader[Any]]] = {r.type_name(): r for r in _READER_CLASSES}
_BY_PARAMS: dict[type[ReaderParams], type[Reader[Any]]] = {r.Params: r for r in _READER_CLASSES}

if TYPE_CHECKING:  # a union built at run time: the type checker sees the base class
    ReaderConfig = ReaderParams
else:
    ReaderConfig = Annotated[
        Union[tuple(r.Params for r in _READER_CLASSES)],  # noqa: UP007 - built from the list
        Field(discriminator="type"),
    ]


def make_reader(params: ReaderParams, source: SourceInfo) -> Reader[Any]:
    """The reader of a source's validated `reader:` parameters."""
    return _BY_PARAMS[type(params)](params, source)


def plan_units(params: ReaderParams, source: SourceInfo, max_docs: int,
               max_bytes: int) -> list[InputUnit]:
    """Deterministic input units of one source (listing and footers only)."""
    return make_reader(params, source).plan(max_docs, max_bytes)


def describe_units(params: ReaderParams, source: SourceInfo, units: list[InputUnit]
                   ) -> dict[str, dict[str, Any]]:
    """What each unit is, by shard id: its payload (files, row ranges) and, for a reader
    that reads files, each file's [size, mtime] (`readers.common.stamp`). A resumed run
    compares this with what the run first listed (pipeline/listing.py)."""
    reader = make_reader(params, source)
    return {unit.shard_id: {"payload": json.loads(json.dumps(unit.payload, default=str)),
                            "files": {path: stamp(path) for path in reader.files(unit)}}
            for unit in units}


def read_unit(params: ReaderParams, source: SourceInfo, unit: InputUnit) -> pa.Table:
    """Documents of one unit, with `reason` set on those to quarantine."""
    return read_unit_more(params, source, unit)[0]


def read_unit_more(params: ReaderParams, source: SourceInfo, unit: InputUnit,
                   ) -> tuple[pa.Table, dict[str, Any] | None]:
    """`read_unit`, and the input found past the unit's plan (`Reader.read_more`), which
    `plan_more` cuts into further units; None if the input ended as planned."""
    table, more = make_reader(params, source).read_more(unit)
    if source.kind == "code":
        table = with_stack_names(table)
    return with_document_checks(table, source.max_doc_bytes), more


def plan_more(params: ReaderParams, source: SourceInfo, unit: InputUnit,
              more: dict[str, Any], max_docs: int, max_bytes: int,
              ) -> list[tuple[dict[str, Any], int]]:
    """(payload, bytes hint) of the units that read what `read_unit_more` of `unit` found
    past its plan."""
    return make_reader(params, source).plan_more(unit, more, max_docs, max_bytes)


def with_stack_names(table: pa.Table) -> pa.Table:
    """`lang` in The Stack's names (`Rocq Prover` -> Coq), asked once per distinct label."""
    labels = table.column("lang")
    renamed = {label: stack_name(label) for label in pc.unique(labels).to_pylist()
               if label is not None and stack_name(label) != label}
    if not renamed:
        return table
    names = pa.array([renamed.get(label, label) for label in labels.to_pylist()],
                     labels.type)
    return table.set_column(table.schema.get_field_index("lang"), "lang", names)


def with_document_checks(table: pa.Table, max_doc_bytes: int) -> pa.Table:
    """Set `reason` for empty, binary and oversize documents the reader accepted."""
    if table.num_rows == 0:
        return table
    text = table.column("text")
    size = pc.binary_length(text)
    empty = pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(text)), 0)
    binary = pc.match_substring(text, "\x00")
    too_large = pc.greater(size, max_doc_bytes)
    found = pc.case_when(
        pc.make_struct(too_large, binary, empty),
        pa.scalar("too_large"), pa.scalar("binary"), pa.scalar("empty"),
    )
    reason = pc.coalesce(table.column("reason"), found)
    return table.set_column(table.schema.get_field_index("reason"), "reason", reason)


class Ingest(StageHooks):
    """Ingest's hooks: it is the runner's first step (readers and the checks above), not
    a `DocumentStage`, but the card and `plan` describe it as every other stage."""

    name = "ingest"
    about = "reads every source; removes empty, undecodable and over-large documents"
    rate_mb_s = (40.0, 40.0)  # MB/s per core (code, text); docs/benchmarks.md
