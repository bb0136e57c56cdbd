"""Redact personal data and secrets in place: every document is kept, its text and every
other published string column (`path`, `repo`, `url`, `license`, ...) rewritten.

Emails, public IP addresses, keys/tokens and private key blocks become
`<EMAIL>`, `<IP_ADDRESS>`, `<KEY>`, `<PRIVATE_KEY>` (rules in filters/pii/).
The counts per kind go into the columns `pii_emails`, `pii_ip_addresses`,
`pii_keys`, `pii_private_keys`, so stats can sum what was redacted.

The rules (detect-secrets and its compiled patterns, ~0.25 s) are imported by `apply`
alone: importing this module, as `inspect`, `explain` and every build's driver do, needs
only the placeholders.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
from pydantic import Field

from ..filters.pii.redact import PLACEHOLDERS, redact
from .base import DocumentStage, ShardContext, StageParams, StageResult
from .explain import Span, WorkFiles
from .hooks import StatsEntry

COLUMNS = {"email": "pii_emails", "ip_address": "pii_ip_addresses", "key": "pii_keys",
           "private_key": "pii_private_keys"}


class PiiParams(StageParams):
    emails: bool = True
    """Replace email addresses with <EMAIL>."""
    ip_addresses: bool = True
    """Replace public IPv4/IPv6 addresses with <IP_ADDRESS> (private, loopback and
    documentation ranges are kept as they are)."""
    keys: bool = True
    """Replace API keys and tokens (AWS, GCP, Azure, GitHub, Slack, Stripe, JWT, ...) and
    random-looking values assigned to key/secret/token/password names with <KEY>."""
    private_keys: bool = True
    """Replace -----BEGIN ... PRIVATE KEY----- blocks with <PRIVATE_KEY>."""
    keep_example_emails: bool = True
    """Keep addresses at reserved domains (example.com/.org/.net, .test, .invalid)."""
    key_min_entropy: float = Field(3.5, ge=0, le=8)
    """Bits per character a value assigned to a key-like name needs to count as a key."""


class Pii(DocumentStage[PiiParams]):
    total_columns = tuple(COLUMNS.values())
    name = "pii"
    about = (
        "personal data (emails, keys, IPs) redaction or removal")
    # MB/s per core (code, text); docs/benchmarks.md: the detect-secrets rules made
    # find_pii 3.6x slower (15 -> 4); windows around one prefilter pass made find_pii 2.5x
    # and the stage 2.3x faster again, at 0.64x the speed before detect-secrets (-> 10)
    rate_mb_s = (10.0, 10.0)

    @classmethod
    def card_limitations(cls, entry: StatsEntry | None) -> list[str]:
        return ["No PII stage ran: personal data in the sources may remain."] \
            if entry is None else []
    Params = PiiParams

    def added_columns(self) -> list[pa.Field]:
        return [pa.field(column, pa.int32()) for column in COLUMNS.values()]

    @classmethod
    def explain(cls, doc: dict[str, Any], entry: StatsEntry, work: WorkFiles) -> list[str]:
        """What the redaction took out of the document, per kind."""
        counts = {kind: doc.get(column) for kind, column in COLUMNS.items()}
        if all(v is None for v in counts.values()):
            return []
        lost = [f"{n} {kind.replace('_', ' ')}{'s' if n != 1 else ''}"
                for kind, n in counts.items() if n]
        return ["redacted " + ", ".join(lost) if lost else "nothing redacted"]

    @classmethod
    def locate(cls, doc: dict[str, Any], entry: StatsEntry) -> list[Span]:
        """The placeholders the redaction left in the kept text."""
        text = doc.get("text") or ""
        if not any(doc.get(column) for column in COLUMNS.values()):
            return []
        spans = [Span(m.start(), m.end(), f"redacted {kind.replace('_', ' ')}")
                 for kind, token in PLACEHOLDERS.items()
                 for m in re.finditer(re.escape(token), text)]
        return sorted(spans, key=lambda s: s.start)[:5]

    def apply(self, docs: pa.Table, ctx: ShardContext) -> StageResult:
        from ..filters.pii.find import find_pii  # here, not at import: see the docstring

        p = self.params
        counts: dict[str, list[int]] = {kind: [0] * docs.num_rows for kind in COLUMNS}
        paths = (docs.column("path").to_pylist() if "path" in docs.column_names
                 else [None] * docs.num_rows)
        table = docs
        # Every published string column, not only `text`: a token in `url`, an e-mail in
        # `path` or `repo` goes into data/*.parquet as surely as one in the text.
        for index, field in enumerate(docs.schema):
            if field.name in UNREDACTED or not _is_string(field.type):
                continue
            values = docs.column(index).to_pylist()
            changed = False
            for row, value in enumerate(values):
                if not value:
                    continue
                spans = find_pii(value, emails=p.emails, ip_addresses=p.ip_addresses,
                                 keys=p.keys, private_keys=p.private_keys,
                                 keep_example_emails=p.keep_example_emails,
                                 key_min_entropy=p.key_min_entropy, path=paths[row])
                if spans:
                    values[row] = redact(value, spans)
                    changed = True
                    for span in spans:
                        counts[span.kind][row] += 1
            if changed:
                table = table.set_column(index, field, pa.array(values, field.type))
        for kind, column in COLUMNS.items():
            values = pa.array(counts[kind], pa.int32())
            if column in table.column_names:  # a rerun over already redacted shards
                table = table.set_column(table.schema.get_field_index(column), column, values)
            else:
                table = table.append_column(pa.field(column, pa.int32()), values)
        return StageResult.keep_all(table)


# Columns that are ours, not the input's: ids are hashes, the rest name manifest entries.
UNREDACTED = frozenset({"id", "source", "kind", "lang", "reason"})


def _is_string(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)
