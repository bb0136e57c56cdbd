"""Opt-out lists: which repositories and owners asked to be left out of The Stack.

The form is the one BigCode publishes the processed requests in
(github.com/bigcode-project/opt-out-v2, `data/optouts.jsonl`): one JSON object per
request, `{"issue": 13, "author": "...", "optout_repos": ["owner/name", ...],
"optout_owners": ["owner", ...]}`; `optout_owners` removes every repository of that
owner (the request's `all`). A plain text list is read too: one `owner` or
`owner/name` per line (`- ` before it and `#` comments allowed, as in the requests'
issue text). GitHub names are case-insensitive, so matching is too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


class OptOutListError(ValueError):
    """A list that is not in either form; the message names the line."""


@dataclass(frozen=True)
class OptOutList:
    repositories: frozenset[str]
    """`owner/name`, lower case."""
    owners: frozenset[str]
    """Owners (users or organisations), lower case."""


def parse(text: str, where: str) -> OptOutList:
    """The repositories and owners of a list in BigCode's jsonl form or as plain lines."""
    repos: set[str] = set()
    owners: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise OptOutListError(f"{where} line {number}: not JSON ({error})") from None
            for key, into in (("optout_repos", repos), ("optout_owners", owners)):
                values = record.get(key, [])
                if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                    raise OptOutListError(f"{where} line {number}: {key!r} must be a list of "
                                          "names")
                into.update(v.strip().lower() for v in values if v.strip())
            continue
        name = line.removeprefix("- ").strip().lower()
        if name.count("/") > 1 or " " in name:
            raise OptOutListError(f"{where} line {number}: expected `owner` or `owner/name`, "
                                  f"got {raw.strip()!r}")
        (repos if "/" in name else owners).add(name)
    bad = sorted(r for r in repos if r.count("/") != 1)
    if bad:
        raise OptOutListError(f"{where}: repository {bad[0]!r} is not `owner/name`")
    return OptOutList(frozenset(repos), frozenset(owners))


def verdict(repo: str | None, optout: OptOutList) -> str | None:
    """`owner` or `repository` when `repo` (`owner/name`) is opted out, else None."""
    if not repo:
        return None
    name = repo.strip().lower()
    if name.split("/", 1)[0] in optout.owners:
        return "owner"
    if name in optout.repositories:
        return "repository"
    return None
