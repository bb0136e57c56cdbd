"""detect-secrets' classes (secret_rules.py, keyword_rule.py) over whole texts, linearly.

Linear by construction (docs/stages.md#pii). No pattern scans the whole text unless it
starts with a literal and has a bounded width (sre then skips to the literal, and each
start reads at most that width). Everything else runs only in windows around a prefilter
hit: one Aho-Corasick pass over the lowered text finds every rule's literals and
KeywordDetector's words, and a necessary shape (`:` + 35 token characters for Telegram)
stands in for the three rules without a literal. A hit opens a window of the rule's own
maximum match width (at most REACH, windows.py) on each side, merged up to SPAN.
`work` (optional) collects the length of every slice a regex is given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Protocol

import ahocorasick

from .keyword_rule import KEYWORDS, find_keywords
from .secret_rules import RULES, Found, Rule, placeholder
from .windows import REACH, lower, merged


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


_KEYWORD = -1  # the rule index of a KeywordDetector word
# private_keys.py finds the whole block (and PuTTY's), not only its first line
_PRIVATE_KEY = next(i for i, rule in enumerate(RULES) if rule.name == "PrivateKeyDetector")
# What the automaton holds for a literal (pyahocorasick is untyped): its length, the rules
# it opens (indices into RULES, or _KEYWORD) and whether the caller asked for it (`also`).
PrefilterEntry = tuple[int, tuple[int, ...], bool]


class Prefilter(Protocol):
    """What `find_secrets` uses of a pyahocorasick automaton (the package has no types)."""

    def iter(self, text: str) -> Iterator[tuple[int, PrefilterEntry]]:
        """(the end position of a literal found, its entry), in text order."""
        ...


def automaton(also: Iterable[str] = ()) -> Prefilter:
    """The prefilter: every rule's literals and KeywordDetector's words, and the caller's
    own literals `also` (lowercase), whose hits `find_secrets` hands back in one pass."""
    automaton = ahocorasick.Automaton()
    entries: dict[str, set[int]] = {}
    for index, rule in enumerate(RULES):
        for literal in rule.triggers:
            entries.setdefault(literal, set()).add(index)
    for literal in KEYWORDS:
        entries.setdefault(literal.lower(), set()).add(_KEYWORD)
    extra = set(also)
    for literal in extra:
        entries.setdefault(literal, set())
    for literal, indices in entries.items():
        entry: PrefilterEntry = (len(literal), tuple(sorted(indices)), literal in extra)
        automaton.add_word(literal, entry)
    automaton.make_automaton()
    return automaton


_TRIGGERS = automaton()


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
                 prefilter: Prefilter = _TRIGGERS, lowered: str | None = None,
                 also: dict[str, list[int]] | None = None) -> Iterator[Found]:
    """Secrets in `text` by secret_rules.py's and keyword_rule.py's rules; `path` picks
    KeywordDetector's file type.

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
    keywords = sorted(s for s, _ in hits.get(_KEYWORD, ()))
    seen: set[tuple[int, int]] = set()  # a span two rules find is reported once
    for found in chain(_in_windows(text, lowered, hits, work), _in_whole_text(text, work),
                       find_keywords(text, keywords, path, work) if keywords else ()):
        if (found.start, found.end) not in seen:
            seen.add((found.start, found.end))
            yield found


def _in_windows(text: str, lowered: str, hits: dict[int, list[tuple[int, int]]],
                work: list[int] | None) -> Iterator[Found]:
    """The rules with a literal or a shape, in the merged windows around their `hits`."""
    size = len(text)
    for index in sorted(i for i in hits if i not in (_KEYWORD, _PRIVATE_KEY)):
        rule, reach = RULES[index], _REACH[index]
        spans = sorted(hits[index])
        for lo, hi in merged((max(0, s - reach), min(size, e + reach)) for s, e in spans):
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
                if found:
                    yield found


def _in_whole_text(text: str, work: list[int] | None) -> Iterator[Found]:
    """The rules without a literal or a shape (bounded, literal first: one pass each)."""
    for index in _WHOLE:
        if work is not None:
            work += [len(text)] * len(RULES[index].patterns)
        for s, e in _matches(index, text, 0, len(text)):
            found = _token(text, RULES[index], s, e)
            if found:
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
