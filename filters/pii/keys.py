"""Keys without a rule set's name: passwords in URLs, tokens with a recognisable shape
(AWS, GCP, GitHub, Slack, Stripe, OpenAI, Hugging Face, JWT, Azure, SendGrid), and random
values assigned to key-like names (keyword + entropy). detect-secrets' classes are
secrets.py's; find.py runs both on one prefilter pass.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

from .redact import Span

# `postgresql://app:PASSWORD@10.1.2.3/db`, `redis://:PASSWORD@host:6379`: the password
# between the user's `:` and the last `@` before the host (an unencoded `@` may be in it).
_URL_CREDENTIALS = re.compile(
    r"(?P<user>[^\s:/@\"'`<>]{0,128}):(?P<pw>[^\s/\"'`<>]{1,256})@(?=[\w\[])")
_URL_SCHEME_END = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,30}\Z")
# Template values are no secrets: ${DB_PASSWORD}, {password}, %(pw)s, <password>, ****.
_PASSWORD_TEMPLATE = re.compile(r"[$%{<*].*|\*+")


def find_url_passwords(text: str, work: list[int] | None = None) -> Iterator[Span]:
    """The password of every `scheme://user:PASSWORD@host`."""
    at = text.find("://")
    while at != -1:
        if work is not None:
            work.append(31 + 3 + 128 + 1 + 256)  # the scheme before, the credentials after
        if _URL_SCHEME_END.search(text, max(0, at - 31), at):
            match = _URL_CREDENTIALS.match(text, at + 3)
            if match and not _PASSWORD_TEMPLATE.fullmatch(match.group("pw")):
                yield Span(match.start("pw"), match.end("pw"), "key", "url_password")
        at = text.find("://", at + 3)


# Shapes with exact spans (only the token); secrets.py adds detect-secrets' classes.
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
# the assigned rule's key words, found in secrets.py's one prefilter pass.
_LITERALS: dict[str, list[tuple[str, int]]] = {}  # lowered -> (literal, token rule)
for _index, (_rule, _literals, _pattern) in enumerate(_TOKENS):
    for _literal in _literals:
        _LITERALS.setdefault(_literal.lower(), []).append((_literal, _index))

# `secret_key = "..."`, `"api_token": "..."`, `AWS_SECRET_ACCESS_KEY=...`: the value is
# a key when it looks random (entropy), not a word, a path or a placeholder.
_KEY_WORDS = ("key", "secret", "token", "passw", "pwd", "credential", "auth")
# What the prefilter must find for these rules (lowercase): the hits `find_shaped_tokens`
# and `find_assigned_keys` are given.
PREFILTER_WORDS = (*_LITERALS, *_KEY_WORDS)
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


def find_shaped_tokens(text: str, hits: dict[str, list[int]],
                       work: list[int] | None = None) -> list[list[Span]]:
    """One group of spans per token rule whose literal the prefilter found (`hits`: the
    lowered literal -> where it starts), in the rules' order."""
    triggered = sorted({index for lowered in _LITERALS.keys() & hits.keys()
                        for literal, index in _LITERALS[lowered]
                        if any(text.startswith(literal, at) for at in hits[lowered])})
    groups: list[list[Span]] = []
    for index in triggered:
        rule, _literals, pattern = _TOKENS[index]
        if work is not None:
            work.append(len(text))  # literal first, bounded width: one pass
        groups.append([Span(m.start(), m.end(), "key", rule) for m in pattern.finditer(text)])
    return groups


def find_assigned_keys(text: str, min_entropy: float, hits: dict[str, list[int]],
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
