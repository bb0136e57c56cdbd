"""Licences of documents: SPDX ids, their class, allow/deny lists. Pure, no I/O.

A document's `license` is a string: one SPDX id or expression (`MIT`,
`MPL-2.0 AND (Apache-2.0 OR MIT)`), or several joined by commas (The Stack's
`max_stars_repo_licenses` list, as the parquet reader stores it; every licence
found in the repository applies, so a comma is an AND).

Classes, The Stack v2's order of preference among duplicates:
`permissive` > `no_license` > `non_permissive`. `no_license` is an empty or null
value; an id we do not know (`unknown`, `LicenseRef-...`) counts as non-permissive,
the safe side.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

LicenseClass = Literal["permissive", "no_license", "non_permissive"]
CLASS_RANK: dict[str, int] = {"permissive": 2, "no_license": 1, "non_permissive": 0}
"""Higher is kept first among duplicates (The Stack v2's order)."""

# Permissive and public-domain licences (The Stack's permissive list, SPDX ids).
PERMISSIVE = frozenset(s.lower() for s in (
    "MIT", "MIT-0", "MIT-CMU", "MIT-feh", "MIT-open-group", "X11", "Apache-2.0", "Apache-1.1",
    "Apache-1.0", "BSD-1-Clause", "BSD-2-Clause", "BSD-2-Clause-Patent", "BSD-3-Clause",
    "BSD-3-Clause-Clear", "BSD-3-Clause-LBNL", "BSD-4-Clause", "BSD-Source-Code", "0BSD",
    "ISC", "Zlib", "zlib-acknowledgement", "Unlicense", "CC0-1.0", "CC-BY-1.0", "CC-BY-2.0",
    "CC-BY-2.5", "CC-BY-3.0", "CC-BY-4.0", "WTFPL", "PSF-2.0", "Python-2.0", "Python-2.0.1",
    "BSL-1.0", "NCSA", "Artistic-2.0", "PostgreSQL", "UPL-1.0", "Unicode-DFS-2016",
    "Unicode-3.0", "HPND", "OpenSSL", "Libpng", "libpng-2.0", "AFL-3.0", "AFL-2.1", "ECL-2.0",
    "MS-PL", "NTP", "Vim", "W3C", "X11-distribute-modifications-variant", "blessing",
    "bzip2-1.0.6", "curl", "FSFAP", "FSFUL", "FSFULLR", "JSON", "Ruby", "TCL", "PHP-3.01",
    "PHP-3.0", "OFL-1.1", "Public-Domain", "LicenseRef-Public-Domain",
))

# Names that are not SPDX ids but say one (PyPI `License:` fields, trove classifiers).
ALIASES = {
    "mit license": "MIT", "the mit license": "MIT", "mit/x11": "MIT", "expat": "MIT",
    "apache 2.0": "Apache-2.0", "apache-2": "Apache-2.0", "apache 2": "Apache-2.0",
    "apache license 2.0": "Apache-2.0", "apache license, version 2.0": "Apache-2.0",
    "apache software license": "Apache-2.0", "apache license version 2.0": "Apache-2.0",
    "apache": "Apache-2.0", "bsd": "BSD-3-Clause", "bsd license": "BSD-3-Clause",
    "new bsd": "BSD-3-Clause", "new bsd license": "BSD-3-Clause",
    "bsd 3-clause license": "BSD-3-Clause", "3-clause bsd license": "BSD-3-Clause",
    "bsd-3": "BSD-3-Clause", "bsd 3-clause": "BSD-3-Clause", "modified bsd": "BSD-3-Clause",
    "bsd 2-clause license": "BSD-2-Clause", "simplified bsd": "BSD-2-Clause",
    "isc license": "ISC", "isc license (iscl)": "ISC", "python software foundation license":
    "PSF-2.0", "psf": "PSF-2.0", "psfl": "PSF-2.0", "mozilla public license 2.0 (mpl 2.0)":
    "MPL-2.0", "gnu general public license v3 (gplv3)": "GPL-3.0-only",
    "gnu general public license v2 (gplv2)": "GPL-2.0-only",
    "gnu lesser general public license v3 (lgplv3)": "LGPL-3.0-only",
    "gnu lesser general public license v2 (lgplv2)": "LGPL-2.0-only",
    "gnu affero general public license v3": "AGPL-3.0-only", "public domain": "Public-Domain",
    "the unlicense (unlicense)": "Unlicense", "zope public license": "ZPL-2.1",
    "eclipse public license 2.0 (epl-2.0)": "EPL-2.0", "boost software license 1.0 (bsl-1.0)":
    "BSL-1.0", "cc0 1.0 universal (cc0 1.0) public domain dedication": "CC0-1.0",
    "historical permission notice and disclaimer (hpnd)": "HPND",
    "academic free license (afl)": "AFL-3.0", "mit no attribution license (mit-0)": "MIT-0",
}

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def from_field(value: str | None) -> str | None:
    """A short `License:` field as an SPDX id or expression (`MIT`, `Apache 2.0`,
    `BSD-3-Clause and Public-Domain`); None for free text or a whole licence text."""
    if not value or "\n" in value.strip() or len(value) > 100:
        return None
    cleaned = value.strip().strip(".")
    if cleaned.lower() in ALIASES:
        return ALIASES[cleaned.lower()]
    tokens = _TOKEN.findall(cleaned)
    if tokens and all(t in "()" or t.upper() in ("AND", "OR", "WITH")
                      or re.fullmatch(r"[A-Za-z][A-Za-z0-9.+-]*", t) for t in tokens):
        words = [t.upper() if t.upper() in ("AND", "OR", "WITH") else t for t in tokens]
        expression = " ".join(words).replace("( ", "(").replace(" )", ")")
        return expression if alternatives(expression) else None
    return None


def from_classifiers(classifiers: Iterable[str]) -> str | None:
    """`License :: OSI Approved :: MIT License` -> MIT (several are joined with AND)."""
    found: list[str] = []
    for classifier in classifiers:
        parts = [p.strip() for p in classifier.split("::")]
        if parts[0] != "License" or len(parts) < 2:
            continue
        spdx = ALIASES.get(parts[-1].lower())
        if spdx and spdx not in found:
            found.append(spdx)
    return " AND ".join(found) if found else None


def alternatives(value: str | None) -> list[list[str]]:
    """The licence value as OR-alternatives, each a list of ids that all apply.

    `MPL-2.0 AND (Apache-2.0 OR MIT)` -> [[MPL-2.0, Apache-2.0], [MPL-2.0, MIT]];
    `MIT,GPL-3.0` (The Stack's list) -> [[MIT, GPL-3.0]]; empty -> []."""
    if not value or not value.strip():
        return []
    options: list[list[str]] = [[]]
    for part in value.split(","):
        if part.strip():
            options = [a + b for a in options for b in _expression(_TOKEN.findall(part))]
    return [o for o in options if o]


def _expression(tokens: list[str]) -> list[list[str]]:
    """A tiny SPDX expression reader: OR of ANDs, parentheses, `WITH exception` kept
    with its licence. A malformed expression reads as all its ids together."""
    try:
        result, rest = _or(tokens, 0)
        if rest != len(tokens):
            raise ValueError
        return result
    except (ValueError, IndexError):
        ids = [t for t in tokens if t not in ("(", ")") and t.upper() not in ("AND", "OR")]
        return [ids] if ids else []


def _or(tokens: list[str], i: int) -> tuple[list[list[str]], int]:
    left, i = _and(tokens, i)
    while i < len(tokens) and tokens[i].upper() == "OR":
        right, i = _and(tokens, i + 1)
        left = left + right
    return left, i


def _and(tokens: list[str], i: int) -> tuple[list[list[str]], int]:
    left, i = _atom(tokens, i)
    while i < len(tokens) and tokens[i].upper() == "AND":
        right, i = _atom(tokens, i + 1)
        left = [a + b for a in left for b in right]
    return left, i


def _atom(tokens: list[str], i: int) -> tuple[list[list[str]], int]:
    if tokens[i] == "(":
        inner, i = _or(tokens, i + 1)
        if tokens[i] != ")":
            raise ValueError("unbalanced")
        return inner, i + 1
    if tokens[i].upper() in ("AND", "OR", ")"):
        raise ValueError("operator where a licence was expected")
    name = tokens[i]
    i += 1
    if i + 1 < len(tokens) and tokens[i].upper() == "WITH":  # GPL-2.0 WITH Classpath-exception
        name, i = f"{name} WITH {tokens[i + 1]}", i + 2
    return [[name]], i


def _is_permissive(license_id: str) -> bool:
    return license_id.split(" WITH ")[0].lower() in PERMISSIVE


def license_class(value: str | None) -> LicenseClass:
    """permissive if some alternative has only permissive ids; no_license if empty."""
    options = alternatives(value)
    if not options:
        return "no_license"
    if any(all(_is_permissive(i) for i in option) for option in options):
        return "permissive"
    return "non_permissive"


def class_of(value: str | None, license_type: str | None = None) -> LicenseClass:
    """The input's own class where it gives one (The Stack v2's `license_type`:
    `permissive` or `no_license`), else `license_class(value)`."""
    if license_type in ("permissive", "no_license"):
        return license_type
    return license_class(value)


def check(value: str | None, allow: frozenset[str] | None, deny: frozenset[str],
          missing: Literal["keep", "drop"]) -> str | None:
    """The reason to drop a document for its licence, or None to keep it.

    `allow` (lower-case ids): some alternative must consist of allowed ids only.
    `deny`: an id in every alternative is denied -> drop. No licence: `missing` decides."""
    options = alternatives(value)
    if not options:
        return "no_license" if missing == "drop" else None
    lowered = [[i.lower() for i in option] for option in options]
    if deny and all(any(i in deny or i.split(" with ")[0] in deny for i in o) for o in lowered):
        return "license_denied"
    if allow is not None and not any(all(i in allow or i.split(" with ")[0] in allow for i in o)
                                     for o in lowered):
        return "license_not_allowed"
    return None
