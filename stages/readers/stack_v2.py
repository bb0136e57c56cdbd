"""The Stack v2: metadata parquet on the Hub, file contents in Software Heritage's S3
bucket, one gzip object per `blob_id`, decoded with the row's `src_encoding`.

As the dataset card (huggingface.co/datasets/bigcode/the-stack-v2-dedup) describes:
the Hub's parquet holds `blob_id`, `src_encoding`, `language`, `repo_name`, `path`,
`detected_licenses`, `license_type`, `is_vendor`, `is_generated`, `star_events_count`,
...; the content is `s3://softwareheritage/content/{blob_id}`, gzip-compressed.

Units are the parquet reader's row ranges (footers only, no fetch at plan time). A unit
fetches its blobs concurrently, `concurrency` at a time, in one boto3 client; boto3
retries throttling, 5xx and connection errors `retries` times with exponential backoff
and jitter (its `standard` mode). Credentials come from boto3's usual chain
(environment, ~/.aws, instance roles; `anonymous: true` signs nothing): none is a
manifest key, so none reaches the run folder or the card.

A blob the bucket does not have (`NoSuchKey`) is quarantined as `ingest:blob_missing`,
one that is not gzip as `ingest:blob_corrupt`, one its `src_encoding` cannot decode as
`ingest:blob_undecodable`; the detail names the blob id, and the build goes on. Any
other failure after the retries fails the build (exit 1, naming the file and the error);
running it again resumes, the finished units kept: quarantining a network error would
make the output depend on the network.

The dataset's own columns become document columns (`columns:` may rename them):
`language` -> lang (langid keeps it for code), `detected_licenses` -> license,
`license_type`, `is_generated` -> generated and `is_vendor` -> vendor (quality's code
rules honour them instead of looking for markers), `repo_name` -> repo,
`path`, `star_events_count` -> stars (keep order).
"""

from __future__ import annotations

import gzip
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import NonNegativeInt, PositiveInt

from ..paths import LocalPath
from .common import READ_SCHEMA, ReaderError, document_id
from .parquet import MAPPED_TARGETS, ParquetParams, ParquetReader, _mapped

# Document column -> The Stack v2's column (the dataset card's names).
STACK_V2_COLUMNS = {"lang": "language", "path": "path", "repo": "repo_name",
                    "stars": "star_events_count", "license": "detected_licenses",
                    "license_type": "license_type", "generated": "is_generated",
                    "vendor": "is_vendor"}
_REQUIRED = ("blob_id", "src_encoding")


class StackV2Params(ParquetParams):
    type: Literal["stack_v2"]  # pyright: ignore[reportIncompatibleVariableOverride]  # its own tag
    paths: list[LocalPath]
    """The metadata parquet: `hf://datasets/bigcode/the-stack-v2-dedup/data/Python/*.parquet`."""
    bucket: str = "softwareheritage"
    prefix: str = "content/"
    """Object key of a blob: prefix + blob_id."""
    endpoint_url: str | None = None
    """An S3-compatible server instead of AWS (boto3 also reads AWS_ENDPOINT_URL)."""
    region: str | None = "us-east-1"
    """The bucket's region (Software Heritage's is us-east-1)."""
    anonymous: bool = False
    """Unsigned requests (a public bucket, no credentials)."""
    concurrency: PositiveInt = 32
    """Blobs fetched at once per unit."""
    retries: NonNegativeInt = 5
    """Retries of a failed fetch (throttled, 5xx, connection), with backoff."""


class BlobStore:
    """Fetches blobs by id from the bucket; one boto3 client, shared by the threads."""

    def __init__(self, params: StackV2Params) -> None:
        try:
            import boto3
            from botocore import UNSIGNED
            from botocore.config import Config
        except ImportError as error:
            raise ReaderError("reader type stack_v2 needs boto3: "
                              "pip install 'lemur-data[s3]'") from error

        config = Config(retries={"max_attempts": params.retries + 1, "mode": "standard"},
                        max_pool_connections=params.concurrency,
                        signature_version=UNSIGNED if params.anonymous else None)
        self.client = boto3.session.Session().client(
            "s3", endpoint_url=params.endpoint_url, region_name=params.region, config=config)
        self.params = params

    def fetch(self, blob_id: str) -> bytes | None:
        """The stored (gzip) bytes of a blob; None if the bucket has no such key."""
        from botocore.exceptions import ClientError

        try:
            response = self.client.get_object(Bucket=self.params.bucket,
                                              Key=self.params.prefix + blob_id)
            return bytes(response["Body"].read())
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise

    def fetch_all(self, blob_ids: list[str]) -> list[bytes | None]:
        """Every blob, in order, `concurrency` at a time."""
        if not blob_ids:
            return []
        with ThreadPoolExecutor(max_workers=min(self.params.concurrency, len(blob_ids))) as pool:
            return list(pool.map(self.fetch, blob_ids))


def decode_blob(blob_id: str, stored: bytes | None,
                encoding: str | None) -> tuple[str, str | None, str | None]:
    """(text, quarantine reason, detail) of one fetched blob."""
    if stored is None:
        return "", "blob_missing", f"blob {blob_id}: not in the bucket (NoSuchKey)"
    try:
        raw = gzip.decompress(stored)
    except (OSError, EOFError, zlib.error) as error:
        return "", "blob_corrupt", f"blob {blob_id}: not gzip ({error})"
    try:
        return raw.decode(encoding or "utf-8"), None, None
    except (LookupError, UnicodeDecodeError) as error:
        return (raw.decode("utf-8", "replace"), "blob_undecodable",
                f"blob {blob_id}: src_encoding {encoding!r}: {error}")


class StackV2Reader(ParquetReader):
    Params = StackV2Params
    params: StackV2Params  # pyright: ignore[reportIncompatibleVariableOverride]  # its Params

    def _mapping(self) -> dict[str, str]:
        return {**STACK_V2_COLUMNS, **self.source.columns}

    def _input_columns(self, schema: pa.Schema, path: str) -> list[str]:
        missing = [c for c in _REQUIRED if c not in schema.names]
        if missing:
            raise ReaderError(f"{path}: column(s) {missing} not found in source "
                              f"{self.source.name!r} (The Stack v2 metadata has blob_id and "
                              f"src_encoding); the file has columns {schema.names}")
        wanted = set(_REQUIRED) | {c for c in self._mapping().values() if c in schema.names}
        if self.params.where is not None:
            wanted.add(self.params.where.top_column())
        return sorted(wanted)

    def _to_documents(self, table: pa.Table, rel: str, start: int, path: str,
                      positions: list[int] | None = None) -> pa.Table:
        n = table.num_rows
        blob_ids = [str(b) for b in table.column("blob_id").to_pylist()]
        encodings = table.column("src_encoding").to_pylist()
        try:
            stored = BlobStore(self.params).fetch_all(blob_ids)
        except ReaderError:
            raise
        except Exception as error:  # noqa: BLE001 - after boto3's retries: fail the unit
            raise ReaderError(f"{path}: fetching blobs from s3://{self.params.bucket}/"
                              f"{self.params.prefix} failed: {error}") from error
        texts, reasons, details = [], [], []
        for blob_id, blob, encoding in zip(blob_ids, stored, encodings, strict=True):
            text, reason, detail = decode_blob(blob_id, blob, encoding)
            texts.append(text)
            reasons.append(reason)
            details.append(detail)
        rows = positions if positions is not None else range(start, start + n)
        columns: dict[str, Any] = {
            "id": pa.array([document_id(self.source.name, f"{rel}#{r}") for r in rows],
                           pa.string()),
            "text": pa.array(texts, pa.large_string()),
            "source": pa.array([self.source.name] * n, pa.string()),
            "kind": pa.array([self.source.kind] * n, pa.string()),
        }
        mapping = self._mapping()
        for target in MAPPED_TARGETS:
            column = mapping.get(target)
            columns[target], bad = _mapped(
                table, target, column if column in table.column_names else None, n)
            for i, error in bad.items():  # a value its column cannot store: that row alone
                if reasons[i] is None:
                    reasons[i], details[i] = "invalid_field", f"{rel} row {rows[i]}: {error}"
        columns["reason"] = pa.array(reasons, pa.string())
        columns["detail"] = pa.array(details, pa.string())
        if self.source.lang and "lang" not in self.source.columns:
            # a fixed lang: where the row has no language of its own
            columns["lang"] = pc.fill_null(columns["lang"], self.source.lang)
        return pa.Table.from_pydict({name: columns[name] for name in READ_SCHEMA.names},
                                    schema=READ_SCHEMA)
