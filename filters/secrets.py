"""Secret classes from a maintained rule set: detect-secrets 1.5.0 (Yelp, PyPI), as a library.

Every regex plugin detect-secrets ships (AWS, Artifactory, Azure, Cloudant, Discord, GitHub,
GitLab, IBM, JWT, Mailchimp, npm, OpenAI, private keys incl. PuTTY, PyPI, SendGrid, Slack,
SoftLayer, Square, Stripe, Telegram, Twilio, URL basic auth) is read from
`detect_secrets.plugins` at import, and its `KeywordDetector` regexes (chosen by file type
from the document's path, as detect-secrets does) find values assigned to password/secret/
key names, filtered by detect-secrets' own heuristics (templates, `$VAR`, indirect
references, sequential strings). A few classes detect-secrets does not name follow gitleaks
8.x rule ids (`mailgun-private-api-token`) or are ours (an `Authorization: Basic` header,
`Password=` in ADO.NET / JDBC / ODBC connection strings).

detect-secrets scans line by line. Here every regex runs on a window of at most WINDOW
characters: a rule's patterns on each tile of the text that holds one of its literals
(tiles overlap by OVERLAP, so a secret shorter than that is seen whole), the keyword
patterns on the lines that hold a keyword. A pattern that backtracks (`//.+/:_authToken=`,
`eyJ[...]+[.]`) then costs at most WINDOW steps per character: a document costs
O(len * WINDOW), never O(len^2). `work` (optional) collects the window sizes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import cast

import ahocorasick
from detect_secrets.filters import heuristic
from detect_secrets.plugins import keyword as ds_keyword
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.util.filetype import determine_file_type

RULE_SET = "detect-secrets 1.5.0"
WINDOW = 2048  # characters a regex sees at once
OVERLAP = 512  # a secret up to this long is seen whole in one window


@dataclass(frozen=True)
class Rule:
    name: str  # detect-secrets' plugin class (or `gitleaks:<id>` / `lemur:<name>`)
    triggers: tuple[str, ...]  # literals one of which every match contains (lowercased)
    patterns: tuple[re.Pattern[str], ...]
    gate: re.Pattern[str] | None = None  # a cheap necessary shape, on the lowered tile


def _denylist(name: str) -> tuple[re.Pattern[str], ...]:
    """The regexes of detect-secrets' plugin `name` (a RegexBasedDetector)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    for plugin in get_mapping_from_secret_type_to_class().values():
        if plugin.__name__ == name and issubclass(plugin, RegexBasedDetector):
            # detect-secrets declares `denylist` a property; its plugins set a tuple
            return tuple(cast("Iterable[re.Pattern[str]]", plugin.denylist))
    raise LookupError(f"{RULE_SET} has no regex plugin {name}")


# The literal every match of a plugin's denylist contains: the cheap test that picks the
# tiles a plugin's regexes run on (lowercased: the automaton runs on the lowered text).
# `()`: no literal is rare enough (`AC`, `:`), so the patterns run on every tile; they are
# cheap, or gated by a shape below.
# IPPublicDetector is left out: ip addresses have their own rule in pii.py, with the
# private and documentation ranges kept.
_PLUGIN_TRIGGERS: dict[str, tuple[str, ...]] = {
    "AWSKeyDetector": ("a3t", "abia", "acca", "akia", "asia", "aws"),
    "ArtifactoryDetector": (),
    "AzureStorageKeyDetector": ("accountkey=",),
    "BasicAuthDetector": ("://",),
    "CloudantDetector": (),
    "DiscordBotTokenDetector": (),
    "GitHubTokenDetector": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLabTokenDetector": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941",
                            "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-"),
    "IbmCloudIamDetector": (),
    "IbmCosHmacDetector": (),
    "JwtTokenDetector": ("eyj",),
    "MailchimpDetector": ("-us",),
    "NpmDetector": (":_authtoken=",),
    "OpenAIDetector": ("t3blbkfj",),
    "PrivateKeyDetector": ("begin ", "putty-user-key-file-2"),
    "PypiTokenDetector": ("pypi-ag",),
    "SendGridDetector": ("sg.",),
    "SlackDetector": ("xox", "hooks.slack.com"),
    "SoftlayerDetector": (),
    "SquareOAuthDetector": ("sq0csp-",),
    "StripeDetector": ("k_live_",),
    "TelegramBotTokenDetector": (),
    "TwilioKeyDetector": (),
}

_EXTRA_RULES = (
    # gitleaks 8.x `mailgun-private-api-token` / `mailgun-signing-key`: key-<32 hex>.
    Rule("gitleaks:mailgun-private-api-token", ("key-",),
         (re.compile(r"(?<![\w-])key-([a-f0-9]{32})(?![\w-])"),)),
    # gitleaks 8.x `npm-access-token`; detect-secrets' NpmDetector wants the .npmrc line.
    Rule("gitleaks:npm-access-token", ("npm_",),
         (re.compile(r"(?<![\w-])npm_[A-Za-z0-9]{36}(?![\w-])"),)),
    # gitleaks 8.x `mailgun-pub-key`.
    Rule("gitleaks:mailgun-pub-key", ("pubkey-",),
         (re.compile(r"(?<![\w-])pubkey-([a-f0-9]{32})(?![\w-])"),)),
    # Not a detect-secrets or gitleaks class: `Authorization: Basic <base64 user:password>`
    # (curl -H, HTTP dumps, fetch headers). BasicAuthDetector covers URLs only.
    Rule("lemur:basic_auth_header", ("basic ",),
         (re.compile(r"(?i)\bauthorization[\"']?\s{0,3}[:=,]\s{0,3}[\"']?\s{0,3}basic\s+"
                     r"([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"),)),
    # Not a detect-secrets class either (its KeywordDetector wants quotes in code files):
    # `Password=...;` in ADO.NET / ODBC strings and `password=...&` in JDBC URLs.
    Rule("lemur:connection_string_password", ("password", "pwd", "passwd"),
         (re.compile(r"(?i)(?:^|[;?&\s\"'{(])(?:password|pwd|passwd)"
                     r"(?:=|\s{1,3}=\s{0,3}(?=[^;\n]{1,128};))"
                     r"([^;&\"'\s<>{}(),\[\]]{1,128})(?=$|[;&\"'\s])"),)),
)


# The IBM / Cloudant / Artifactory patterns try an optional-everything prefix at every
# position (1 s for 2.7 MB of stdlib each): a tile runs them only if it holds the shape of
# their value (or, for Cloudant, of their key name) as well as a literal.
_GATES = {
    "ArtifactoryDetector": re.compile(r"akc[a-z0-9]{10}|ap[0-9a-f][a-z0-9]{8}"),  # lowered
    "CloudantDetector": re.compile(r"cl(?:oudant|ou)?[_-]?(?:api)?(?:key|pw|pass|token)"
                                   r"|cloudant\.com"),
    "IbmCloudIamDetector": re.compile(r"[a-z0-9_\-]{44}"),
    "IbmCosHmacDetector": re.compile(r"[a-f0-9]{48}"),
    "SoftlayerDetector": re.compile(r"[a-z0-9]{64}"),
}


def _rules() -> tuple[Rule, ...]:
    rules = [Rule(name, triggers, _denylist(name), _GATES.get(name))
             for name, triggers in _PLUGIN_TRIGGERS.items()]
    return (*rules, *_EXTRA_RULES)


RULES = _rules()
# KeywordDetector: detect-secrets' own DENYLIST words (api_?key, password, secret, ...).
_KEYWORD_TRIGGERS = ("key", "pass", "pwd", "secret", "contrase")
KEYWORD_RULE = "KeywordDetector"


def _automaton() -> ahocorasick.Automaton:
    automaton = ahocorasick.Automaton()
    for index, rule in enumerate(RULES):
        for literal in rule.triggers:
            automaton.add_word(literal, (*automaton.get(literal, ()), index))
    automaton.make_automaton()
    return automaton


_TRIGGERS = _automaton()
_ALWAYS = tuple(i for i, rule in enumerate(RULES) if not rule.triggers)
# Rules run on every tile whose secret holds a run of at least LONG_RUN token characters
# with a digit in it (Discord 24+, Twilio 34, Telegram 35, IBM 44/48/64, Cloudant 24/64;
# random values of that length all but surely hold one): a tile without such a run (most
# of them) is skipped after one pass over the document.
LONG_RUN = 24
_LONG = re.compile(rf"[A-Za-z0-9_\-]{{{LONG_RUN},}}")
_DIGIT = re.compile(r"\d")
_NEEDS_LONG = frozenset(i for i, rule in enumerate(RULES) if not rule.triggers
                        and rule.name != "ArtifactoryDetector")
_KEYWORD_HIT = re.compile("|".join(_KEYWORD_TRIGGERS))


@dataclass(frozen=True)
class Found:
    start: int
    end: int
    rule: str


def _tiles(length: int) -> Iterator[tuple[int, int]]:
    """Windows of WINDOW characters over the text, overlapping by OVERLAP."""
    step = WINDOW - OVERLAP
    start = 0
    while True:
        end = min(length, start + WINDOW)
        yield start, end
        if end >= length:
            return
        start += step


def _keyword_lines(text: str, lowered: str) -> Iterator[tuple[int, int]]:
    """The line around each keyword hit, clipped to WINDOW characters (long lines in
    overlapping pieces); a hit inside the last window's body is already covered."""
    covered = -1
    for hit in _KEYWORD_HIT.finditer(lowered):
        at = hit.start()
        if at < covered:
            continue
        line_start = text.rfind("\n", 0, at) + 1
        line_end = text.find("\n", at)
        line_end = len(text) if line_end == -1 else line_end
        start = max(line_start, at - OVERLAP)
        end = min(line_end, start + WINDOW)
        covered = end - OVERLAP if end < line_end else end
        yield start, end


def _secret_span(match: re.Match[str], offset: int) -> tuple[int, int]:
    """detect-secrets reports a plugin's groups if its pattern has any, else the match."""
    spans = [match.span(i) for i in range(1, (match.re.groups or 0) + 1)
             if match.group(i)]
    if spans:
        return offset + min(s for s, _ in spans), offset + max(e for _, e in spans)
    return offset + match.start(), offset + match.end()


def find_secrets(text: str, path: str | None = None,
                 work: list[int] | None = None) -> Iterator[Found]:
    """Secrets in `text` by the rules above; `path` picks KeywordDetector's file type."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters change length when lowered
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    seen: set[tuple[int, int]] = set()
    step = WINDOW - OVERLAP
    triggered: dict[int, set[int]] = {}  # tile -> rules with a literal in it
    for end, rules in _TRIGGERS.iter(lowered):
        for tile in (end // step - 1, end // step):
            if tile >= 0 and end < tile * step + WINDOW:
                triggered.setdefault(tile, set()).update(rules)
    long_tiles: set[int] = set()
    for run in _LONG.finditer(text):
        value = run.group()
        if value.isalpha() or not _DIGIT.search(value):  # no random secret lacks a digit
            continue
        first = max(0, (run.end() - WINDOW) // step)
        long_tiles.update(range(first, run.start() // step + 1))
    for tile_index, (start, end) in enumerate(_tiles(len(text))):
        low = lowered[start:end]
        tile = text[start:end]
        for index in sorted({*_ALWAYS, *triggered.get(tile_index, ())}):
            if index in _NEEDS_LONG and tile_index not in long_tiles:
                continue
            rule = RULES[index]
            if rule.gate is not None and rule.gate.search(low) is None:
                continue
            if work is not None:
                work.append(len(tile))
            for pattern in rule.patterns:
                for match in pattern.finditer(tile):
                    found = _token(text, rule, match, start)
                    if found and (found.start, found.end) not in seen:
                        seen.add((found.start, found.end))
                        yield found
    groups = ds_keyword.REGEX_BY_FILETYPE.get(
        determine_file_type(path or ""), ds_keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)
    for start, end in _keyword_lines(text, lowered):
        if work is not None:
            work.append(end - start)
        for found in _keywords(text[start:end], start, groups):
            if (found.start, found.end) not in seen:
                seen.add((found.start, found.end))
                yield found


def _token(text: str, rule: Rule, match: re.Match[str], offset: int) -> Found | None:
    if rule.name == "PrivateKeyDetector":
        return None  # the block itself is found by pii.py's private key rule
    s, e = _secret_span(match, offset)
    name = _NAME_PREFIX.match(text, s, e)
    s = name.end() if name else s  # `AccountKey=`: keep the name, as elsewhere
    if rule.name == "JwtTokenDetector":  # its pattern ends lazily: take the signature too
        tail = _TOKEN_TAIL.match(text, e)
        e = tail.end() if tail else e
    return Found(s, e, rule.name) if e > s and not _placeholder(text[s:e]) else None


_NAME_PREFIX = re.compile(r"[A-Za-z_]{3,30}[=:]\s{0,3}")
_TOKEN_TAIL = re.compile(rf"[A-Za-z0-9_\-.+/=]{{0,{OVERLAP}}}")


_ASSIGNS = re.compile(r"[=:;]")  # every KeywordDetector pattern needs one of these


def _keywords(window: str, offset: int, groups: dict[re.Pattern[str], int]) -> Iterator[Found]:
    if not _ASSIGNS.search(window):
        return
    checked = False
    for pattern, group in groups.items():
        for match in pattern.finditer(window):
            secret = match.group(group)
            if not secret or _placeholder(secret) or heuristic.is_sequential_string(secret):
                continue
            if not checked:  # detect-secrets' own filter of `x = get(secret)` lines
                if heuristic.is_indirect_reference(window):
                    return
                checked = True
            yield Found(offset + match.start(group), offset + match.end(group), KEYWORD_RULE)


_TEMPLATE = re.compile(r"[$%{<*].*|.*[}>]|\*+|x+|\.{3}|(?i:none|null|true|false|nil|"
                       r"changeme|password|secret|undefined|redacted|hidden|example)")


def _placeholder(secret: str) -> bool:
    """detect-secrets' template and `$VAR` heuristics, and values that name no secret."""
    return (len(secret) < 3 or heuristic.is_templated_secret(secret)
            or heuristic.is_prefixed_with_dollar_sign(secret)
            or _TEMPLATE.fullmatch(secret) is not None)
