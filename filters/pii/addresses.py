"""E-mail addresses and public IP addresses. Addresses that are not personal stay:
private, loopback, link-local, documentation (192.0.2.0/24, 198.51.100.0/24,
203.0.113.0/24, 2001:db8::/32), multicast and reserved ranges, and e-mails at reserved
example domains.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from .redact import Span

# The everyday local-part alphabet: wider (RFC 5322 allows ' = / ...) would swallow the
# quote or `=` before an address in code.
_EMAIL_LOCAL_END = re.compile(r"[A-Za-z0-9._%+-]{1,64}\Z")
_EMAIL_DOMAIN = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
                           r"[A-Za-z]{2,24}(?![\w-])")
_DOMAIN_MAX = 255  # RFC 1035: a name is at most 255 octets; the match reads no further
_RESERVED_DOMAINS = re.compile(r"(?i)(?:^|\.)(?:example\.(?:com|org|net)|example|test"
                               r"|invalid|localhost)$")


def find_emails(text: str, keep_example: bool, work: list[int] | None = None) -> Iterator[Span]:
    if work is not None:
        work.append(len(text))
    for at in re.finditer("@", text):
        i = at.start()
        if work is not None:
            work.append(64 + _DOMAIN_MAX)
        local = _EMAIL_LOCAL_END.search(text, max(0, i - 64), i)
        domain = _EMAIL_DOMAIN.match(text, i + 1, i + 1 + _DOMAIN_MAX)
        if not local or not domain:
            continue
        start = local.start()
        while start < i and text[start] == ".":  # a local part may not start with a dot
            start += 1
        if start == i or text[i - 1] == "." or text[start - 1:start] == "@":
            continue
        if text[domain.end():domain.end() + 1] == "(":
            continue  # a matrix product and a method call: L@D@L.conjugate()
        if keep_example and _RESERVED_DOMAINS.search(domain.group(0)):
            continue
        yield Span(start, domain.end(), "email", "email")


# Patterns start with a digit/hex class, not a lookbehind, so the regex engine can skip
# ahead fast; the boundaries are checked by hand.
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?:{_OCTET}\.){{3}}{_OCTET}")
# The middle ".d.d." starts with a literal, which the regex engine scans for 30x faster
# than a pattern starting with a digit class; the outer octets are read by hand.
_IPV4_MIDDLE = re.compile(r"\.\d{1,3}\.\d{1,3}\.")
_IPV6_COLONS = re.compile(r":[0-9A-Fa-f]{0,4}:")  # literal first: fast; expanded by hand
_HEX_OR_COLON = frozenset("0123456789abcdefABCDEF:")
_WORDISH = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
# Dotted numbers that are not addresses: versions, OIDs, standard section numbers.
_NOT_ADDRESS_BEFORE = re.compile(
    r"(?i)(?:version|release|ver|v|oid|objectidentifier|section|sec|rfc ?\d+|§|chapter|x\.)"
    r"[\s:=\"'(]{0,3}\Z")


def _is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return not (address.is_private or address.is_loopback or address.is_link_local
                or address.is_multicast or address.is_reserved or address.is_unspecified
                or address in _DOC_V6)


_DOC_V6 = ipaddress.IPv6Network("2001:db8::/32")


def _bounded(text: str, start: int, end: int, also: str) -> bool:
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return (before not in _WORDISH and before not in also
            and after not in _WORDISH and after not in also)


def find_ip_addresses(text: str) -> Iterator[Span]:
    for middle in _IPV4_MIDDLE.finditer(text):
        start, end = middle.start(), middle.end()
        while start > 0 and middle.start() - start < 3 and text[start - 1].isdigit():
            start -= 1
        while end < len(text) and end - middle.end() < 3 and text[end].isdigit():
            end += 1
        match = _IPV4.fullmatch(text, start, end)
        if match is None:
            continue
        # Not part of a longer dotted number (an OID, a version); a full stop may follow.
        if (not _bounded(text, start, end, "") or text[start - 1:start] == "."
                or (text[end:end + 1] == "." and text[end + 1:end + 2].isdigit())):
            continue
        if _NOT_ADDRESS_BEFORE.search(text, max(0, start - 20), start):
            continue
        if all(len(octet) == 1 for octet in match.group(0).split(".")):
            continue  # 3.8.2.4 is a section or version far more often than an address
        if _is_public(ipaddress.IPv4Address(match.group(0))):
            yield Span(start, end, "ip_address", "ipv4")
    done = 0
    for colons in _IPV6_COLONS.finditer(text):
        if colons.start() < done:
            continue
        start, end = colons.start(), colons.end()
        while start > 0 and text[start - 1] in _HEX_OR_COLON and colons.start() - start < 40:
            start -= 1
        while end < len(text) and text[end] in _HEX_OR_COLON and end - colons.end() < 40:
            end += 1
        done = end
        if not _bounded(text, start, end, ".") or end - start > 39:
            continue
        value = text[start:end]
        groups = [g for g in value.split(":") if g]
        # Slices (a[1::2]), times (12:30:45) and C++ scopes look like short IPv6 forms.
        if len(groups) < 3 or ("::" not in value and len(groups) < 8):
            continue
        try:
            address = ipaddress.IPv6Address(value)
        except ValueError:
            continue
        if _is_public(address):
            yield Span(start, end, "ip_address", "ipv6")
