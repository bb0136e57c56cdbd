"""What a run reads: its input listing, recorded as the run starts, compared on resume.

Markers say a task finished, not what it read. A tree that gained a file after a kill
would shift every unit after it, so a marker by task key would stand for other files
than the ones its outputs hold, and the resumed run would mix two listings. So the run
records, before its first task, what each unit is: the unit's payload (files, row
ranges) and each file's stamp (size, times, inode or ETag: stages/readers/common.py
`stamp`). A resumed run lists again and must find the same record; otherwise it is
refused with what changed, or, with `--relist`, starts over.

The record is the run's own state, kept in `work/` with its markers: it holds local
times and inodes, which differ between two copies of the same input, and a run's
published files must not (same manifest and input, byte-identical output).
"""

from __future__ import annotations

import json
from typing import Any

from ..stages import storage
from ..stages.ingest import describe_units
from ..stages.readers.common import InputUnit
from .manifest import Manifest

LISTING = "work/listing.json"


def describe(manifest: Manifest, units: dict[str, list[InputUnit]]) -> dict[str, Any]:
    """{source: {shard id: unit record}} for every source of the manifest."""
    readers = {s.name: (s.reader, s.info()) for s in manifest.sources}
    return {name: describe_units(*readers[name], source_units)
            for name, source_units in units.items()}


def changes(before: dict[str, Any], now: dict[str, Any], limit: int = 5) -> list[str]:
    """What differs between two listings, file by file where the units name files."""
    found: list[str] = []
    for source in sorted(set(before) | set(now)):
        if source not in now or source not in before:
            found.append(f"source {source!r} {'is new' if source in now else 'is gone'}")
            continue
        old, new = before[source], now[source]
        old_files = {p: s for unit in old.values() for p, s in unit["files"].items()}
        new_files = {p: s for unit in new.values() for p, s in unit["files"].items()}
        here: list[str] = []
        for path in sorted(set(old_files) | set(new_files)):
            if path not in old_files:
                here.append(f"{path}: new file")
            elif path not in new_files:
                here.append(f"{path}: no longer listed")
            elif old_files[path] != new_files[path]:
                here.append(f"{path}: {_changed(old_files[path], new_files[path])}")
        if len(old) != len(new):
            here.append(f"source {source!r}: {len(old)} input units then, {len(new)} now")
        if not here:  # same files: a unit reads other rows or ranges of them
            here += [f"unit {shard}: reads other rows or ranges now" for shard in sorted(old)
                     if old[shard]["payload"] != new[shard]["payload"]][:1]
        found += here
    if len(found) > limit:
        found = found[:limit] + [f"and {len(found) - limit} more"]
    return found


def _changed(old: list[Any], new: list[Any]) -> str:
    """How one file's stamp changed, in words."""
    if old[0] != new[0]:
        return f"size {old[0]} -> {new[0]}"
    if old[1] != new[1]:
        return f"modified (mtime {old[1]} -> {new[1]})"
    return ("rewritten or replaced with the same size and modification time (its change "
            "time, inode or ETag differ)")


def recorded(run_dir: str) -> dict[str, Any] | None:
    path = storage.join(run_dir, LISTING)
    return storage.read_json(path) if storage.exists(path) else None


def record(run_dir: str, listing: dict[str, Any]) -> None:
    # ASCII JSON: a file named with non-UTF-8 bytes is listed with a lone surrogate
    # (os.fsdecode), which UTF-8 cannot encode; "\\udcef" escapes read back the same.
    text = json.dumps(listing, indent=2, sort_keys=True) + "\n"
    storage.write_bytes_atomic(storage.join(run_dir, LISTING), text.encode())
