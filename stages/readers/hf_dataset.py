"""Any dataset `datasets.load_dataset` can open: Hub datasets (streaming by default),
local json/parquet/csv files through its builders, or a dataset saved with
`save_to_disk`. Streaming units are the dataset's own shards, so planning reads no
rows; a downloaded (non-streaming) or saved dataset is cut into shards of 10,000 rows.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

import pyarrow as pa
from pydantic import model_validator

from ..paths import LocalPath, PathField
from .common import (
    InputUnit,
    Reader,
    ReaderError,
    ReaderParams,
    RowCollector,
)
from .where import RowFilter


class LoadingScriptError(ReaderError):
    """A dataset that only opens through a Python loading script, which `datasets` >= 4
    no longer runs: a manifest error (exit 2), not a failed run."""


_SCRIPT_REFUSED = "Dataset scripts are no longer supported"


def loading_script(path: str) -> str | None:
    """The loading script a local dataset `path` would need (`name/name.py`, or `path`
    itself when it is a .py file), as `datasets.load_dataset` looks for it; else None."""
    if path.endswith(".py") and os.path.isfile(path):
        return path
    script = os.path.join(path, os.path.basename(os.path.normpath(path)) + ".py")
    return script if os.path.isdir(path) and os.path.isfile(script) else None


def script_message(path: str, name: str | None, split: str, script: str) -> str:
    """The one line that says why such a dataset cannot be read and what to read instead."""
    config = name or "default"
    return (f"dataset {path!r} needs its loading script {os.path.basename(script)!r}, which "
            f"datasets>=4 no longer runs; read its files instead: the Hub's parquet conversion, "
            f"revision refs/convert/parquet (reader {{type: parquet, paths: [\"hf://datasets/{path}@refs%2Fconvert%2Fparquet/"
            f"{config}/{split}/*.parquet\"]}}) or the dataset's own data files (reader type "
            f"jsonl or parquet on the files the script downloads)")


class HFDatasetParams(ReaderParams):
    type: Literal["hf_dataset"]
    path: Annotated[str, PathField(when="from_disk")]
    """Hub id (`bigcode/the-stack-smol`), a builder (`json`, `parquet`) or a saved folder."""
    name: str | None = None
    split: str = "train"
    data_files: list[LocalPath] | LocalPath | None = None
    data_dir: str | None = None
    revision: str | None = None
    streaming: bool = True
    """Stream the rows (no local copy). false: `load_dataset` downloads and converts the
    dataset to the local `datasets` cache first (on every node that reads it), which allows
    split slicing such as `train[:10%]`; ignored with `from_disk`."""
    from_disk: bool = False
    """Open `path` with `datasets.load_from_disk` (a dataset saved by save_to_disk)."""
    where: RowFilter | None = None
    """Read only the rows whose (dotted) field has one of the values (readers/where.py)."""

    @model_validator(mode="after")
    def _no_loading_script(self) -> HFDatasetParams:
        # Local folders are checked here (validate, offline); a Hub dataset's script is
        # only known once `plan` asks the Hub (HFDatasetReader._load).
        script = None if self.from_disk else loading_script(self.path)
        if script is not None:
            raise ValueError(script_message(self.path, self.name, self.split, script))
        return self


class HFDatasetReader(Reader[HFDatasetParams]):
    Params = HFDatasetParams

    def _load(self) -> Any:
        try:
            import datasets
        except ImportError as error:
            raise ReaderError("reader type hf_dataset needs the `datasets` package: "
                              "pip install 'lemur-data[hub]'") from error
        p = self.params
        try:
            if p.from_disk:
                loaded = datasets.load_from_disk(p.path)
                dataset = loaded[p.split] if isinstance(loaded, datasets.DatasetDict) else loaded
            else:
                dataset = datasets.load_dataset(p.path, p.name, split=p.split,
                                                data_files=p.data_files, data_dir=p.data_dir,
                                                revision=p.revision, streaming=p.streaming)
                if p.streaming:
                    return dataset
        except Exception as error:  # noqa: BLE001 - network, missing files, bad builder
            if _SCRIPT_REFUSED in str(error):
                script = str(error).rsplit(" ", 1)[-1]
                raise LoadingScriptError(f"{self.where}: " + script_message(
                    p.path, p.name, p.split, script)) from None
            raise ReaderError(f"{self.where}: cannot open dataset "
                              f"{p.path!r} split {p.split!r}: {error}") from error
        # A map-style dataset sits in local arrow files: shards of 10k rows read lazily.
        return dataset.to_iterable_dataset(num_shards=max(1, len(dataset) // 10000))

    def plan(self, max_docs: int, max_bytes: int) -> list[InputUnit]:
        shards = self._load().num_shards
        return [InputUnit(self.source.name, i, {"shards": shards}) for i in range(shards)]

    def read(self, unit: InputUnit) -> pa.Table:
        dataset = self._load().shard(num_shards=unit.payload["shards"], index=unit.index)
        text_key = self.source.column("text", "text")
        rows = RowCollector(self.source)
        for row_no, record in enumerate(dataset):
            if self.params.where is not None and not self.params.where.matches(record):
                continue  # another part of the dataset: not this source's input
            locator = f"{self.params.split}/{unit.index}#{row_no}"
            text = record.get(text_key)
            values = {t: record.get(self.source.column(t, "") or "")
                      for t in ("path", "repo", "license", "lang", "url", "license_type")}
            fields: dict[str, Any] = {  # document columns, for RowCollector.add
                k: (",".join(map(str, v)) if isinstance(v, list) else
                    (None if v is None else str(v))) for k, v in values.items()}
            stars = record.get(self.source.column("stars", "") or "")
            fields["stars"] = stars if isinstance(stars, int) else None
            for flag in ("generated", "vendor"):
                value = record.get(self.source.column(flag, "") or "")
                fields[flag] = value if isinstance(value, bool) else None
            if not isinstance(text, str):
                reason = "missing_text" if text is None else "invalid_text_type"
                rows.add(locator, "", reason, f"row {row_no}: field {text_key!r}", **fields)
            else:
                rows.add(locator, text, **fields)
        return rows.table()
