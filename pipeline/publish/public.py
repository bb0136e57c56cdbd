"""What files meant for publishing (the card, report.html, the copies `push` uploads)
may say about the machine that built the run: no local paths, no environment values.

Each value a manifest placeholder was expanded to is written back as the placeholder
the user wrote (`{stdlib}`, `${HOME}`, `{manifest_dir}` for relative paths), so the
published manifest can be rebuilt elsewhere; the run folder becomes `{run_dir}` and the
home folder `${HOME}`. An absolute path the manifest spells out elsewhere is the user's
own words and stays. The local manifest.json keeps the resolved paths (resume compares
them).
"""

from __future__ import annotations

import html
import json
import os
import re

from ...stages import storage

MIN_VALUE = 3
"""Shorter expanded values (an empty or one-letter variable) are not rewritten: they
would match inside ordinary words, and they reveal nothing."""


def replacements(run_dir: str) -> dict[str, str]:
    """Local value -> what published text says instead."""
    out: dict[str, str] = {}
    home = os.path.expanduser("~")
    for value in (home, os.path.realpath(home)):
        out[value] = "${HOME}"
    try:
        record = storage.read_json(storage.join(run_dir, "manifest.json"))
    except FileNotFoundError:
        record = {}
    # later entries win: what the user wrote beats the generic home/tmp names
    for token, value in sorted((record.get("expansions") or {}).items()):
        out[value] = token
        if os.path.isabs(value):
            out[os.path.realpath(value)] = token
    if "://" not in run_dir:
        for value in (os.path.abspath(run_dir), os.path.realpath(run_dir)):
            out[value] = "{run_dir}"
    return {v.rstrip("/") or v: t for v, t in out.items() if len(v.rstrip("/")) >= MIN_VALUE}


def public_text(text: str, run_dir: str) -> str:
    """`text` with every local value replaced (also its JSON- and HTML-escaped forms)."""
    table: dict[str, str] = {}
    for value, token in replacements(run_dir).items():
        for form in (value, json.dumps(value)[1:-1], html.escape(value)):
            table.setdefault(form, token)
    if not table:
        return text
    # Longest first, so {stdlib} wins over the home folder that contains it; a value
    # ends at a path boundary, so /root does not rewrite /rootfs.
    alternatives = "|".join(re.escape(v) for v in sorted(table, key=len, reverse=True))
    pattern = re.compile(f"(?:{alternatives})" + r"(?![\w\-])")
    return pattern.sub(lambda m: table[m.group(0)], text)
