"""`find_pii`: every PII rule of this package over one text, in priority order, with one
prefilter pass for detect-secrets' classes, the shaped tokens and the assigned keys.

Secrets: detect-secrets 1.5.0's classes, used as a library in secrets.py (over whole texts
in bounded windows, not its line-by-line scanner), plus the shape rules of keys.py and a
keyword + entropy rule for random values assigned to key-like names.
"""

from __future__ import annotations

from collections.abc import Iterable

from .addresses import find_emails, find_ip_addresses
from .keys import PREFILTER_WORDS, find_assigned_keys, find_shaped_tokens, find_url_passwords
from .private_keys import find_private_keys
from .redact import Span
from .secrets import automaton, find_secrets

_PREFILTER = automaton(also=PREFILTER_WORDS)


def find_pii(text: str, *, emails: bool = True, ip_addresses: bool = True, keys: bool = True,
             private_keys: bool = True, keep_example_emails: bool = True,
             key_min_entropy: float = 3.5, path: str | None = None,
             work: list[int] | None = None) -> list[Span]:
    """Non-overlapping spans to replace, in text order.

    Where spans overlap the earlier rule in this order wins: private key blocks (whole,
    then unterminated, then PuTTY), URL passwords, shaped tokens, detect-secrets' classes
    (secrets.py; `path` picks its keyword rules by file type, `work` collects the
    window sizes its regexes saw), assigned keys, emails, IP addresses.
    """
    groups: list[list[Span]] = []  # one per rule, in priority order
    if private_keys and ("PRIVATE KEY" in text or "PuTTY-User-Key-File-" in text):
        groups += _by_rule(find_private_keys(text, work))
    if keys and "://" in text:  # before emails: `user:pass@db.host.com` is no address
        groups.append(list(find_url_passwords(text, work)))
    if keys:
        hits: dict[str, list[int]] = {}
        found = list(find_secrets(text, path, work, prefilter=_PREFILTER, also=hits))
        groups += find_shaped_tokens(text, hits, work)
        groups += _by_rule(Span(f.start, f.end, "key", f.rule) for f in found)
        groups.append(list(find_assigned_keys(text, key_min_entropy, hits, work)))
    if emails and "@" in text:
        groups.append(list(find_emails(text, keep_example_emails, work)))
    if ip_addresses:
        if work is not None:
            work += [len(text)] * 2  # the IPv4 and IPv6 passes
        groups += _by_rule(find_ip_addresses(text))
    return _choose(groups)


def _by_rule(spans: Iterable[Span]) -> list[list[Span]]:
    groups: dict[str, list[Span]] = {}
    for span in spans:
        groups.setdefault(span.rule, []).append(span)
    return list(groups.values())


def _choose(groups: list[list[Span]]) -> list[Span]:
    """Disjoint spans in text order; where spans overlap the earlier group wins. Each group
    is merged into the chosen spans in one sorted pass (inserting span by span into a
    sorted list was quadratic on a document of 100k interleaved e-mails and addresses)."""
    chosen: list[Span] = []
    for group in groups:
        merged: list[Span] = []
        i = 0
        for span in sorted(group, key=lambda s: s.start):
            while i < len(chosen) and chosen[i].start < span.start:
                merged.append(chosen[i])
                i += 1
            if merged and merged[-1].end > span.start:
                continue
            if i < len(chosen) and chosen[i].start < span.end:
                continue
            merged.append(span)
        chosen = merged + chosen[i:]
    return chosen
