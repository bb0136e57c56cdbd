"""detect-secrets' `KeywordDetector` over a whole text: values assigned to password/secret/
key names, by the patterns it picks for the document's file type (from its path), filtered
by its own heuristics (templates, `$VAR`, indirect references, sequential strings).

Its patterns begin `(password|...)\\w*`: they are tried anchored at the first keyword of a
word (a later keyword in the same word can only match where the first does), up to REACH
characters past that word and never past its line, as detect-secrets reads a line. Where
the keywords are is the prefilter's (secrets.py) pass over the lowered text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from detect_secrets.filters import heuristic
from detect_secrets.plugins import keyword as ds_keyword
from detect_secrets.util.filetype import determine_file_type

from .secret_rules import Found, placeholder
from .windows import REACH, merged

KEYWORD_RULE = "KeywordDetector"


def _expand(word: str) -> list[str]:
    """`api_?key` -> api_key, apikey: KeywordDetector's DENYLIST words as literals."""
    head, sep, tail = word.partition("_?")
    if not sep:
        return [word]
    return [head + joint + rest for joint in ("_", "") for rest in _expand(tail)]


KEYWORDS = tuple(literal for word in ds_keyword.DENYLIST for literal in _expand(word))
assert all(re.fullmatch(ds_keyword.DENYLIST_REGEX, w) for w in KEYWORDS)


# KeywordDetector: every pattern but one starts with DENYLIST_REGEX, `(password|...)\w*`;
# the other (`"value" == password`) ends with it.
_ANCHORED_START = ds_keyword.DENYLIST_REGEX
_WORD = re.compile(rf"\w{{0,{REACH}}}")
_VALUE_TAIL = re.compile(r"[^\v'\"\n]*")
_ASSIGNS = re.compile(r"[=:;(]")  # `=`, `:=`, `: "`, `"...";`, C++'s `password("...")`


def find_keywords(text: str, starts: list[int], path: str | None,
                  work: list[int] | None) -> Iterator[Found]:
    """KeywordDetector's patterns for `path`'s file type at the keyword hits `starts`
    (sorted)."""
    groups: dict[re.Pattern[str], int] = ds_keyword.REGEX_BY_FILETYPE.get(
        determine_file_type(path or ""), ds_keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)
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
    for lo, hi in merged(lines):
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
