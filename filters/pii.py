"""Find and replace personal data and secrets, as StarCoder's PII pass did.

Kinds and their placeholders: emails `<EMAIL>`, public IP addresses
`<IP_ADDRESS>`, keys, tokens and passwords in URLs (`scheme://user:PASSWORD@host`)
`<KEY>`, private key blocks (also one cut off before its END line) `<PRIVATE_KEY>`.
Only the secret itself is replaced, never the quotes or the `key = ` around it,
so code that parsed before still parses.

Secrets: detect-secrets 1.5.0's classes, used as a library in filters/secrets.py (over
whole texts in bounded windows, not its line-by-line scanner), plus the shape rules below
and a keyword + entropy rule for random values assigned to key-like names.

Addresses that are not personal stay: private, loopback, link-local,
documentation (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32),
multicast and reserved ranges, and emails at reserved example domains.
"""

from __future__ import annotations

import bisect
import ipaddress
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .secrets import automaton, find_secrets

PLACEHOLDERS = {
    "email": "<EMAIL>",
    "ip_address": "<IP_ADDRESS>",
    "key": "<KEY>",
    "private_key": "<PRIVATE_KEY>",
}
KINDS = tuple(PLACEHOLDERS)


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    rule: str


# --- private keys --------------------------------------------------------------------------

_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_MAX_BLOCK = 20000  # characters between BEGIN and END in a real key (RSA 16384: ~13 KB)

# A block cut off before its END line (a truncated file, a paste): the BEGIN line and the
# base64 lines (and `Proc-Type:`-style headers) after it, up to the first other line. A
# short last line counts only with its `=` padding; most of the key is gone either way.
_KEY_LINES = re.compile(
    r"(?:(?:[ \t]*(?:\r?\n|(?:\\r)?\\n)[ \t]*|[ \t]+)?"
    r"(?:[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]{1,15}={1,2}|[A-Za-z-]{3,20}: [^\r\n\\]{1,200})"
    r")*")
# PuTTY's .ppk (detect-secrets' PrivateKeyDetector names `PuTTY-User-Key-File-2`):
# a header line, then `Key: value` lines and base64 lines, ending with `Private-MAC:`.
_PUTTY = re.compile(r"PuTTY-User-Key-File-[23]: [^\r\n\\]{1,200}")
_PUTTY_MAC = re.compile(r"Private-MAC: [0-9a-fA-F]{1,128}")


def _private_keys(text: str, work: list[int] | None) -> Iterator[Span]:
    """Whole blocks, then unterminated ones; linear: the END after each BEGIN is found by
    bisecting the END positions, never by a regex scanning forward from every BEGIN (a
    1 MB run of BEGIN lines once took 22 s that way)."""
    if work is not None:
        work += [len(text)] * 4  # the BEGIN, END, PuTTY and Private-MAC passes
    ends = [(m.start(), m.end()) for m in _END.finditer(text)]
    end_starts = [start for start, _ in ends]
    for begin in _BEGIN.finditer(text):
        at = bisect.bisect_left(end_starts, begin.end())
        if at < len(ends) and ends[at][0] - begin.end() <= _MAX_BLOCK:
            yield Span(begin.start(), ends[at][1], "private_key", "private_key_block")
        else:
            tail = _KEY_LINES.match(text, begin.end())
            if work is not None and tail:
                work.append(tail.end() - begin.end())
            yield Span(begin.start(), tail.end() if tail else begin.end(), "private_key",
                       "private_key_unterminated")
    macs = [(m.start(), m.end()) for m in _PUTTY_MAC.finditer(text)]  # bisected, as END
    mac_starts = [start for start, _ in macs]
    for header in _PUTTY.finditer(text):
        at = bisect.bisect_left(mac_starts, header.end())
        if at < len(macs) and macs[at][0] - header.end() <= _MAX_BLOCK:
            end = macs[at][1]
        else:
            tail = _KEY_LINES.match(text, header.end())
            if work is not None and tail:
                work.append(tail.end() - header.end())
            end = tail.end() if tail else header.end()
        yield Span(header.start(), end, "private_key", "putty_private_key")


# --- passwords in URLs -----------------------------------------------------------------

# `postgresql://app:PASSWORD@10.1.2.3/db`, `redis://:PASSWORD@host:6379`: the password
# between the user's `:` and the last `@` before the host (an unencoded `@` may be in it).
_URL_CREDENTIALS = re.compile(
    r"(?P<user>[^\s:/@\"'`<>]{0,128}):(?P<pw>[^\s/\"'`<>]{1,256})@(?=[\w\[])")
_URL_SCHEME_END = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,30}\Z")
# Template values are no secrets: ${DB_PASSWORD}, {password}, %(pw)s, <password>, ****.
_PASSWORD_TEMPLATE = re.compile(r"[$%{<*].*|\*+")


def _url_passwords(text: str, work: list[int] | None = None) -> Iterator[Span]:
    at = text.find("://")
    while at != -1:
        if work is not None:
            work.append(31 + 3 + 128 + 1 + 256)  # the scheme before, the credentials after
        if _URL_SCHEME_END.search(text, max(0, at - 31), at):
            match = _URL_CREDENTIALS.match(text, at + 3)
            if match and not _PASSWORD_TEMPLATE.fullmatch(match.group("pw")):
                yield Span(match.start("pw"), match.end("pw"), "key", "url_password")
        at = text.find("://", at + 3)


# --- tokens with a recognisable shape ------------------------------------------------------

# Shapes with exact spans (only the token); filters/secrets.py adds detect-secrets' classes.
_TOKENS: list[tuple[str, tuple[str, ...], re.Pattern[str]]] = [
    ("aws_access_key_id", ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "A3T"),
     re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|A3T[A-Z0-9])"
                r"[A-Z0-9]{16}(?![A-Z0-9])")),
    ("gcp_api_key", ("AIza",), re.compile(r"(?<![\w-])AIza[0-9A-Za-z_\-]{35}(?![\w-])")),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     re.compile(r"(?<![\w])(?:gh[pousr]_[A-Za-z0-9]{36,255}"
                r"|github_pat_[A-Za-z0-9_]{80,255})(?![\w])")),
    ("slack_token", ("xox",), re.compile(r"(?<![\w-])xox[abposr]-[A-Za-z0-9-]{10,250}(?![\w-])")),
    ("slack_webhook", ("hooks.slack.com",),
     re.compile(r"(?<=https://hooks\.slack\.com/services/)"
                r"T[A-Za-z0-9_]{6,}/B[A-Za-z0-9_]{6,}/[A-Za-z0-9_]{20,}")),
    ("stripe_key", ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_", "pk_test_"),
     re.compile(r"(?<![\w])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{20,247}(?![\w])")),
    ("openai_key", ("T3BlbkFJ",),
     re.compile(r"(?<![\w-])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"
                r"T3BlbkFJ[A-Za-z0-9_\-]{20,}(?![\w-])")),
    ("huggingface_token", ("hf_",), re.compile(r"(?<![\w])hf_[A-Za-z]{34}(?![\w])")),
    ("jwt", ("eyJ",), re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}"
                                 r"\.[A-Za-z0-9_-]{8,}(?![\w-])")),
    ("azure_storage_key", ("AccountKey=",), re.compile(r"(?<=AccountKey=)[A-Za-z0-9+/]{86}==")),
    ("sendgrid_key", ("SG.",),
     re.compile(r"(?<![\w])SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}(?![\w])")),
]


# The token rules' literals (case matters: a lowered hit is checked against the text) and
# the assigned rule's key words, found in filters/secrets.py's one prefilter pass.
_LITERALS: dict[str, list[tuple[str, int]]] = {}  # lowered -> (literal, token rule)
for _index, (_rule, _literals, _pattern) in enumerate(_TOKENS):
    for _literal in _literals:
        _LITERALS.setdefault(_literal.lower(), []).append((_literal, _index))

# `secret_key = "..."`, `"api_token": "..."`, `AWS_SECRET_ACCESS_KEY=...`: the value is
# a key when it looks random (entropy), not a word, a path or a placeholder.
_KEY_WORDS = ("key", "secret", "token", "passw", "pwd", "credential", "auth")
_PREFILTER = automaton(also=(*_LITERALS, *_KEY_WORDS))
_ASSIGNED_TAIL = re.compile(
    r"[\w\-]{0,30}[\"']?\s{0,5}(?:=|:|=>|:=)\s{0,5}(?P<quote>[rbuf]?[\"'`])?"
    r"(?P<value>[A-Za-z0-9+/=_\-.~]{16,256})(?![A-Za-z0-9+/=_\-.~])")
_ASSIGNED_WIDTH = 30 + 1 + 5 + 2 + 5 + 2 + 256 + 1


def _code_name(text: str, match: re.Match[str]) -> bool:
    """An unquoted value that is code: a call, an attribute, a snake_case name."""
    value, end = match.group("value"), match.end("value")
    if text[end:end + 1] in ("(", "[") or "." in value:
        return True
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+", value):
        return True
    # A type or constant name (`private_key: PKCS7PrivateKeyTypes`): few digits.
    return bool(re.fullmatch(r"[A-Za-z_]\w*", value)
                and sum(c.isdigit() for c in value) < 0.15 * len(value))


def _assigned(text: str, min_entropy: float, hits: dict[str, list[int]],
              work: list[int] | None = None) -> Iterator[Span]:
    """`hits`: where each key word starts (the prefilter's pass), then an anchored match: a
    case-insensitive regex alternation scanning every position runs at a tenth of the
    speed."""
    seen: set[int] = set()
    for word in _KEY_WORDS:
        for at in hits.get(word, ()):
            if work is not None:
                work.append(_ASSIGNED_WIDTH)
            match = _ASSIGNED_TAIL.match(text, at + len(word))
            if match and match.start("value") not in seen:
                seen.add(match.start("value"))
                if match.group("quote") is None and _code_name(text, match):
                    pass
                elif _looks_random(match.group("value"), min_entropy):
                    yield Span(match.start("value"), match.end("value"), "key", "assigned")


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(c / len(value) * math.log2(c / len(value)) for c in counts.values())


def _looks_random(value: str, min_entropy: float) -> bool:
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    if re.fullmatch(r"[a-z_.]+[0-9]*|[A-Z_.]+[0-9]*|[\d.]+", value):  # identifiers, versions
        return False
    if re.fullmatch(r"(?:[A-Za-z_][A-Za-z0-9_]*\.)+[A-Za-z_][A-Za-z0-9_]*", value):
        return False  # dotted names (module.attr)
    letters = [c for c in value if c.isalpha()]
    vowels = sum(c in "aeiouAEIOU" for c in letters) / len(letters)
    digits = sum(c.isdigit() for c in value) / len(value)
    if vowels >= 0.4 and digits < 0.2:
        return False  # words with a number (CustomAuthorizer2), not random characters
    return entropy(value) >= min_entropy


# --- emails --------------------------------------------------------------------------------

# The everyday local-part alphabet: wider (RFC 5322 allows ' = / ...) would swallow the
# quote or `=` before an address in code.
_EMAIL_LOCAL_END = re.compile(r"[A-Za-z0-9._%+-]{1,64}\Z")
_EMAIL_DOMAIN = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
                           r"[A-Za-z]{2,24}(?![\w-])")
_DOMAIN_MAX = 255  # RFC 1035: a name is at most 255 octets; the match reads no further
_RESERVED_DOMAINS = re.compile(r"(?i)(?:^|\.)(?:example\.(?:com|org|net)|example|test"
                               r"|invalid|localhost)$")


def _emails(text: str, keep_example: bool, work: list[int] | None = None) -> Iterator[Span]:
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


# --- IP addresses --------------------------------------------------------------------------

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


def _ips(text: str) -> Iterator[Span]:
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


# --- all together --------------------------------------------------------------------------


def find_pii(text: str, *, emails: bool = True, ip_addresses: bool = True, keys: bool = True,
             private_keys: bool = True, keep_example_emails: bool = True,
             key_min_entropy: float = 3.5, path: str | None = None,
             work: list[int] | None = None) -> list[Span]:
    """Non-overlapping spans to replace, in text order.

    Where spans overlap the earlier rule in this order wins: private key blocks (whole,
    then unterminated, then PuTTY), URL passwords, shaped tokens, detect-secrets' classes
    (filters/secrets.py; `path` picks its keyword rules by file type, `work` collects the
    window sizes its regexes saw), assigned keys, emails, IP addresses.
    """
    groups: list[list[Span]] = []  # one per rule, in priority order
    if private_keys and ("PRIVATE KEY" in text or "PuTTY-User-Key-File-" in text):
        groups += _by_rule(_private_keys(text, work))
    if keys and "://" in text:  # before emails: `user:pass@db.host.com` is no address
        groups.append(list(_url_passwords(text, work)))
    if keys:
        hits: dict[str, list[int]] = {}
        found = list(find_secrets(text, path, work, prefilter=_PREFILTER, also=hits))
        triggered = sorted({index for lowered in _LITERALS.keys() & hits.keys()
                            for literal, index in _LITERALS[lowered]
                            if any(text.startswith(literal, at) for at in hits[lowered])})
        for index in triggered:
            rule, _literals, pattern = _TOKENS[index]
            if work is not None:
                work.append(len(text))  # literal first, bounded width: one pass
            groups.append([Span(m.start(), m.end(), "key", rule)
                           for m in pattern.finditer(text)])
        groups += _by_rule(Span(f.start, f.end, "key", f.rule) for f in found)
        groups.append(list(_assigned(text, key_min_entropy, hits, work)))
    if emails and "@" in text:
        groups.append(list(_emails(text, keep_example_emails, work)))
    if ip_addresses:
        if work is not None:
            work += [len(text)] * 2  # the IPv4 and IPv6 passes
        groups += _by_rule(_ips(text))
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


def redact(text: str, spans: list[Span]) -> str:
    out, last = [], 0
    for span in spans:
        out.append(text[last:span.start])
        out.append(PLACEHOLDERS[span.kind])
        last = span.end
    out.append(text[last:])
    return "".join(out)
