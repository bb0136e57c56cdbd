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

Linear by construction (docs/stages.md#pii). No pattern scans the whole text unless it
starts with a literal and has a bounded width (sre then skips to the literal, and each
start reads at most that width). Everything else runs only in windows around a prefilter
hit: one Aho-Corasick pass over the lowered text finds every rule's literals and
KeywordDetector's words, and a necessary shape (`:` + 35 token characters for Telegram)
stands in for the three rules without a literal. A hit opens a window of the rule's own
maximum match width (at most REACH) on each side; windows of one rule are merged up to
SPAN characters, so each character is read by a rule a bounded number of times.
KeywordDetector's patterns begin `(password|...)\\w*`: they are tried anchored at the first
keyword of a word (a later keyword in the same word can only match where the first does),
up to REACH characters past that word and never past its line, as detect-secrets reads a
line. `work` (optional) collects the length of every slice a regex is given.
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
REACH = 256  # characters a window reaches on each side of a hit (an unbounded pattern's cap)
SPAN = 8 * REACH  # longest merged window: 2 * REACH of every window is overlap at most


@dataclass(frozen=True)
class Rule:
    name: str  # detect-secrets' plugin class (or `gitleaks:<id>` / `lemur:<name>`)
    triggers: tuple[str, ...]  # literals one of which every match contains (lowercased)
    patterns: tuple[re.Pattern[str], ...]
    gate: re.Pattern[str] | None = None  # a cheap necessary shape, on the lowered window
    shape: re.Pattern[str] | None = None  # without triggers: a necessary shape, on the text


def _denylist(name: str) -> tuple[re.Pattern[str], ...]:
    """The regexes of detect-secrets' plugin `name` (a RegexBasedDetector)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    for plugin in get_mapping_from_secret_type_to_class().values():
        if plugin.__name__ == name and issubclass(plugin, RegexBasedDetector):
            # detect-secrets declares `denylist` a property; its plugins set a tuple
            return tuple(cast("Iterable[re.Pattern[str]]", plugin.denylist))
    raise LookupError(f"{RULE_SET} has no regex plugin {name}")


# The literals one of which every match of a plugin's denylist contains (lowercased: the
# automaton runs on the lowered text): a hit opens the plugin's window.
# IPPublicDetector is left out: ip addresses have their own rule in pii.py, with the
# private and documentation ranges kept.
_KEY_NAMES = ("key", "pwd", "pass", "token")  # IBM, SoftLayer: (?:key|pwd|password|pass|token)
_PLUGIN_TRIGGERS: dict[str, tuple[str, ...]] = {
    "AWSKeyDetector": ("a3t", "abia", "acca", "akia", "asia", "aws"),
    "ArtifactoryDetector": (),
    "AzureStorageKeyDetector": ("accountkey=",),
    "BasicAuthDetector": ("://",),
    "CloudantDetector": (*_KEY_NAMES, "pw", "cloudant.com"),
    "DiscordBotTokenDetector": (),
    "GitHubTokenDetector": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "GitLabTokenDetector": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941",
                            "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-"),
    "IbmCloudIamDetector": _KEY_NAMES,
    "IbmCosHmacDetector": ("secret",),
    "JwtTokenDetector": ("eyj",),
    "MailchimpDetector": ("-us",),
    "NpmDetector": (":_authtoken=",),
    "OpenAIDetector": ("t3blbkfj",),
    "PrivateKeyDetector": ("begin ", "putty-user-key-file-2"),
    "PypiTokenDetector": ("pypi-ag",),
    "SendGridDetector": ("sg.",),
    "SlackDetector": ("xox", "hooks.slack.com"),
    "SoftlayerDetector": (*_KEY_NAMES, "api.softlayer.com"),
    "SquareOAuthDetector": ("sq0csp-",),
    "StripeDetector": ("k_live_",),
    "TelegramBotTokenDetector": (),
    "TwilioKeyDetector": (),  # AC / SK: case matters; its patterns scan the whole text
}

# Plugins without a literal rare enough: a necessary shape of their match, found on the
# (not lowered) text by a pattern that starts with a literal (sre skips ahead to it).
_SHAPES = {
    "ArtifactoryDetector": re.compile(r"AKC|AP[\dA-F]"),
    "DiscordBotTokenDetector": re.compile(r"\.[\w-]{6}\."),  # `\.[a-zA-Z\d_-]{6}\.`
    "TelegramBotTokenDetector": re.compile(r":[\w-]{35}"),  # `:[0-9A-Za-z_-]{35}`
}

# The IBM / Cloudant / SoftLayer patterns try an optional-everything prefix at every
# position of their window: a window runs them only if it holds the shape of their value
# (or, for Cloudant, of its key name) too (on the lowered window).
_GATES = {
    "ArtifactoryDetector": re.compile(r"akc[a-z0-9]{10}|ap[0-9a-f][a-z0-9]{8}"),
    "CloudantDetector": re.compile(r"cl(?:oudant|ou)?[_-]?(?:api)?(?:key|pw|pass|token)"
                                   r"|cloudant\.com"),
    "IbmCloudIamDetector": re.compile(r"[a-z0-9_\-]{44}"),
    "IbmCosHmacDetector": re.compile(r"[a-f0-9]{48}"),
    "SoftlayerDetector": re.compile(r"[a-z0-9]{64}"),
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


def _rules() -> tuple[Rule, ...]:
    rules = [Rule(name, triggers, _denylist(name), _GATES.get(name), _SHAPES.get(name))
             for name, triggers in _PLUGIN_TRIGGERS.items()]
    return (*rules, *_EXTRA_RULES)


RULES = _rules()
KEYWORD_RULE = "KeywordDetector"


def _width(pattern: re.Pattern[str]) -> int:
    """The most characters one match of `pattern` spans (sre's own bound; huge if none)."""
    # no public API gives a pattern's width; sre's parser (the stdlib's own) does
    parser = re._parser  # pyright: ignore[reportAttributeAccessIssue]  # stdlib-internal
    return parser.parse(pattern.pattern, pattern.flags).getwidth()[1]


# How far a window reaches on each side of a hit: a match holding the hit lies within.
_REACH = tuple(min(REACH, max(_width(p) for p in rule.patterns)) for rule in RULES)
_UNBOUNDED = tuple(max(_width(p) for p in rule.patterns) > REACH for rule in RULES)
# Rules without a literal or a shape scan the whole text: their patterns must start with
# a literal and be bounded (Twilio's `AC[a-z0-9]{32}`).
_WHOLE = tuple(i for i, rule in enumerate(RULES) if not rule.triggers and rule.shape is None)
assert all(not _UNBOUNDED[i] for i in _WHOLE)
# Cloudant / IBM / SoftLayer write their separator `(?: *)(?:=|:|:=|=>| +|::)(?: *)`:
# three ways to read a run of spaces, cubic in its length on a failed match (400 spaces:
# 1.3 s). Their values hold no space, so they run on the window with every run of spaces
# shortened to one, which keeps each match and removes the ambiguity.
_SPACE_RUNS = frozenset(i for i, rule in enumerate(RULES)
                        if any("(?: *)" in p.pattern for p in rule.patterns))
_SPACES = re.compile(" {2,}")


def _expand(word: str) -> list[str]:
    """`api_?key` -> api_key, apikey: KeywordDetector's DENYLIST words as literals."""
    head, sep, tail = word.partition("_?")
    if not sep:
        return [word]
    return [head + joint + rest for joint in ("_", "") for rest in _expand(tail)]


_KEYWORDS = tuple(literal for word in ds_keyword.DENYLIST for literal in _expand(word))
assert all(re.fullmatch(ds_keyword.DENYLIST_REGEX, w) for w in _KEYWORDS)
_KEYWORD = -1  # the automaton's value for a KeywordDetector word
# pii.py's private key rule finds the whole block (and PuTTY's), not only its first line
_PRIVATE_KEY = next(i for i, rule in enumerate(RULES) if rule.name == "PrivateKeyDetector")


def automaton(also: Iterable[str] = ()) -> ahocorasick.Automaton:
    """The prefilter: every rule's literals and KeywordDetector's words, and the caller's
    own literals `also` (lowercase), whose hits `find_secrets` hands back in one pass."""
    automaton = ahocorasick.Automaton()
    entries: dict[str, set[int]] = {}
    for index, rule in enumerate(RULES):
        for literal in rule.triggers:
            entries.setdefault(literal, set()).add(index)
    for literal in _KEYWORDS:
        entries.setdefault(literal.lower(), set()).add(_KEYWORD)
    extra = set(also)
    for literal in extra:
        entries.setdefault(literal, set())
    for literal, indices in entries.items():
        automaton.add_word(literal, (len(literal), tuple(sorted(indices)), literal in extra))
    automaton.make_automaton()
    return automaton


_TRIGGERS = automaton()


# Characters whose lowercase is longer (U+0130 `İ` -> `i̇`): lowered to their first character,
# so that positions in the lowered text are positions in the text.
# The only one in Python 3.11's Unicode (tests/test_pii_secrets.py checks it).
LONGER_LOWER = {"\u0130": "i"}


def lower(text: str) -> str:
    """`text.lower()`, of the same length (a position in it is a position in `text`)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    for char, first in LONGER_LOWER.items():  # str.replace: str.translate is 50x slower
        text = text.replace(char, first)
    return text.lower()


@dataclass(frozen=True)
class Found:
    start: int
    end: int
    rule: str


def _merged(windows: Iterable[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Windows sorted by start, overlapping ones joined while they stay within SPAN."""
    lo = hi = -1
    for start, end in windows:
        if lo >= 0 and start <= hi and max(hi, end) - lo <= SPAN:
            hi = max(hi, end)
            continue
        if lo >= 0:
            yield lo, hi
        lo, hi = start, end
    if lo >= 0:
        yield lo, hi


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    r"""detect-secrets reports a plugin's groups if its pattern has any, else the match.

    Two of its patterns need more: GitLab's `(glpat|...)-[A-Za-z0-9_\-]{20,50}` groups only
    the prefix (detect-secrets itself reports `glpat`), so token characters the match holds
    after the groups are taken too; Artifactory's `(?:\s|=|:|"|^)AKC...(?:\s|"|$)` has no
    group and holds its delimiters, which are left out (the quotes stay, as elsewhere)."""
    spans = [match.span(i) for i in range(1, (match.re.groups or 0) + 1)
             if match.group(i)]
    if spans:
        s, e = min(s for s, _ in spans), max(e for _, e in spans)
        rest = _TOKEN_REST.match(match.string, e, match.end())
        return s, rest.end() if rest and rest.end() == match.end() else e
    s, e = match.start(), match.end()
    while s < e and match.string[s] in _DELIMITERS:
        s += 1
    while e > s and match.string[e - 1] in _DELIMITERS:
        e -= 1
    return s, e


_TOKEN_REST = re.compile(r"[\w\-.+/=]+")
_DELIMITERS = frozenset(" \t\r\n\f\v=:\"'")


def _matches(index: int, text: str, lo: int, hi: int) -> Iterator[tuple[int, int]]:
    """The secret spans of rule `index`'s patterns in text[lo:hi]."""
    rule = RULES[index]
    if index in _SPACE_RUNS and "  " in text[lo:hi]:
        # shortened copy (one character of context before, for the lookbehinds)
        base = max(0, lo - 1)
        window = text[base:hi]
        keep: list[int] = []  # keep[j]: the window position of the copy's character j
        last = 0
        for run in _SPACES.finditer(window):
            keep += range(last, run.start() + 1)
            last = run.end()
        keep += range(last, len(window))
        copy = "".join(window[j] for j in keep)
        for pattern in rule.patterns:
            for match in pattern.finditer(copy, lo - base):
                s, e = _secret_span(match)
                if e > s:
                    yield base + keep[s], base + keep[e - 1] + 1
        return
    for pattern in rule.patterns:
        for match in pattern.finditer(text, lo, hi):
            yield _secret_span(match)


def find_secrets(text: str, path: str | None = None, work: list[int] | None = None, *,
                 prefilter: ahocorasick.Automaton = _TRIGGERS, lowered: str | None = None,
                 also: dict[str, list[int]] | None = None) -> Iterator[Found]:
    """Secrets in `text` by the rules above; `path` picks KeywordDetector's file type.

    `prefilter` from `automaton(literals)` also finds the caller's literals: their start
    positions go to `also` (in text order), as soon as the first secret is asked for.
    `lowered` is `lower(text)` if the caller has it."""
    lowered = lower(text) if lowered is None else lowered
    if work is not None:
        work.append(len(text))  # the automaton's pass
    hits: dict[int, list[tuple[int, int]]] = {}  # rule -> (start, end) of its literals
    for last, (length, indices, extra) in prefilter.iter(lowered):
        for index in indices:
            hits.setdefault(index, []).append((last + 1 - length, last + 1))
        if extra and also is not None:
            also.setdefault(lowered[last + 1 - length:last + 1], []).append(last + 1 - length)
    for index, rule in enumerate(RULES):
        if rule.shape is not None:
            if work is not None:
                work.append(len(text))
            hits[index] = [m.span() for m in rule.shape.finditer(text)]
    seen: set[tuple[int, int]] = set()
    size = len(text)
    for index in sorted(i for i in hits if i not in (_KEYWORD, _PRIVATE_KEY)):
        rule, reach = RULES[index], _REACH[index]
        spans = sorted(hits[index])
        for lo, hi in _merged((max(0, s - reach), min(size, e + reach)) for s, e in spans):
            if rule.gate is not None:
                if work is not None:
                    work.append(hi - lo)
                if rule.gate.search(lowered, lo, hi) is None:
                    continue
            if work is not None:
                work += [hi - lo] * len(rule.patterns)
            for s, e in _matches(index, text, lo, hi):
                if e == hi < size and _UNBOUNDED[index]:  # cut by the window: take the rest
                    tail = _TOKEN_TAIL.match(text, e)
                    if work is not None and tail:
                        work.append(tail.end() - e)
                    e = tail.end() if tail else e
                found = _token(text, rule, s, e)
                if found and (found.start, found.end) not in seen:
                    seen.add((found.start, found.end))
                    yield found
    for index in _WHOLE:
        if work is not None:
            work += [size] * len(RULES[index].patterns)
        for s, e in _matches(index, text, 0, size):
            found = _token(text, RULES[index], s, e)
            if found and (found.start, found.end) not in seen:
                seen.add((found.start, found.end))
                yield found
    if _KEYWORD in hits:
        groups = ds_keyword.REGEX_BY_FILETYPE.get(
            determine_file_type(path or ""),
            ds_keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)
        for found in _keywords(text, sorted(s for s, _ in hits[_KEYWORD]), groups, work):
            if (found.start, found.end) not in seen:
                seen.add((found.start, found.end))
                yield found


def _token(text: str, rule: Rule, s: int, e: int) -> Found | None:
    name = _NAME_PREFIX.match(text, s, e)
    s = name.end() if name else s  # `AccountKey=`: keep the name, as elsewhere
    if rule.name == "JwtTokenDetector":  # its pattern ends lazily: take the signature too
        tail = _TOKEN_TAIL.match(text, e)
        e = tail.end() if tail else e
    return Found(s, e, rule.name) if e > s and not placeholder(text[s:e]) else None


_NAME_PREFIX = re.compile(r"[A-Za-z_]{3,30}[=:]\s{0,3}")
_TOKEN_TAIL = re.compile(rf"[A-Za-z0-9_\-.+/=]{{0,{REACH}}}")

# KeywordDetector: every pattern but one starts with DENYLIST_REGEX, `(password|...)\w*`;
# the other (`"value" == password`) ends with it.
_ANCHORED_START = ds_keyword.DENYLIST_REGEX
_WORD = re.compile(rf"\w{{0,{REACH}}}")
_VALUE_TAIL = re.compile(r"[^\v'\"\n]*")
_ASSIGNS = re.compile(r"[=:;(]")  # `=`, `:=`, `: "`, `"...";`, C++'s `password("...")`


def _keywords(text: str, starts: list[int], groups: dict[re.Pattern[str], int],
              work: list[int] | None) -> Iterator[Found]:
    """KeywordDetector's patterns at the keyword hits `starts` (sorted)."""
    anchored = [(p, g) for p, g in groups.items() if p.pattern.startswith(_ANCHORED_START)]
    floating = [(p, g) for p, g in groups.items() if not p.pattern.startswith(_ANCHORED_START)]
    size = len(text)
    word_end = -1
    resume = [0] * len(anchored)  # a pattern's next try starts after its last match
    lines: list[tuple[int, int]] = []  # where the floating patterns look
    indirect: dict[int, bool] = {}  # line start -> detect-secrets' indirect-reference test
    for at in starts:
        if at < word_end:  # a later keyword of the same word matches only where the first does
            continue
        word_end = _end(_WORD, text, at)
        limit = min(size, word_end + REACH)
        newline = text.find("\n", at, limit)
        end = limit if newline == -1 else newline  # detect-secrets reads one line
        before = text.rfind("\n", max(0, at - REACH), at)
        line_lo = before + 1 if before != -1 else max(0, at - REACH)
        lines.append((line_lo, end))
        if work is not None:
            work.append(end - at)
        if not _ASSIGNS.search(text, at, end):  # every anchored pattern needs one of these
            continue
        for k, (pattern, group) in enumerate(anchored):
            if at < resume[k]:
                continue
            if work is not None:
                work.append(end - at)
            match = pattern.match(text, at, end)
            if match is None:
                continue
            resume[k] = match.end()
            s, e = match.span(group)
            if e == end == limit < size:  # a value cut by the window: take the rest
                tail = _end(_VALUE_TAIL, text, e)
                if work is not None:
                    work.append(tail - e)
                e = resume[k] = tail
            secret = text[s:e]
            if not secret or placeholder(secret) or heuristic.is_sequential_string(secret):
                continue
            if not _indirect(text, at, indirect, work):
                yield Found(s, e, KEYWORD_RULE)
    for lo, hi in _merged(lines):
        for pattern, group in floating:
            if work is not None:
                work.append(hi - lo)
            for match in pattern.finditer(text, lo, hi):
                secret = match.group(group)
                if (secret and not placeholder(secret)
                        and not heuristic.is_sequential_string(secret)):
                    yield Found(match.start(group), match.end(group), KEYWORD_RULE)


def _end(pattern: re.Pattern[str], text: str, at: int) -> int:
    """Where `pattern` (one that matches the empty string too) ends, matched at `at`."""
    match = pattern.match(text, at)
    return match.end() if match else at


def _indirect(text: str, at: int, cache: dict[int, bool], work: list[int] | None) -> bool:
    """detect-secrets' filter of `x = get(secret)` lines, on the whole line as it reads it,
    once per line; it passes lines over LONG_LINE characters without a look (its regex
    backtracks), so only that much around `at` is searched for the line's ends."""
    before = text.rfind("\n", max(0, at - LONG_LINE - 1), at)
    if before == -1 and at > LONG_LINE:
        return False
    start = before + 1
    if start not in cache:
        after = text.find("\n", at, start + LONG_LINE + 1)
        end = len(text) if after == -1 and start + LONG_LINE >= len(text) else after
        if end == -1:
            cache[start] = False
        else:
            if work is not None:
                work.append(end - start)
            cache[start] = heuristic.is_indirect_reference(text[start:end])
    return cache[start]


LONG_LINE = 1000  # detect_secrets.filters.heuristic.is_indirect_reference


_TEMPLATE = re.compile(r"[$%{<*].*|.*[}>]|\*+|x+|\.{3}|(?i:none|null|true|false|nil|"
                       r"changeme|password|secret|undefined|redacted|hidden|example)")


def placeholder(secret: str) -> bool:
    """detect-secrets' template and `$VAR` heuristics, and values that name no secret."""
    return (len(secret) < 3 or heuristic.is_templated_secret(secret)
            or heuristic.is_prefixed_with_dollar_sign(secret)
            or _TEMPLATE.fullmatch(secret) is not None)
