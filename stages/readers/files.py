"""Whole files as documents: a local source tree (code) or matched files (text).

`tree` walks a folder of repositories: the language comes from the file name,
extension and shebang, the repo from the first path components, and the license
from the package's `*.dist-info/METADATA` when the root is a site-packages folder
(package_license.py), else from a LICENSE/COPYING file at the repo's top. `files`
takes glob patterns (local or fsspec URLs), one document per file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from fnmatch import fnmatchcase
from typing import Literal

import fsspec
import pyarrow as pa

from ...filters.langid.code import detect_code_language
from ..paths import LocalPath
from .common import (
    InputUnit,
    Reader,
    ReaderError,
    ReaderParams,
    RowCollector,
    SourceInfo,
    chunk_by,
    decode_bom,
    decode_text,
    expand_paths,
    file_size,
)
from .package_license import PackageLicenses

DEFAULT_EXCLUDE = ["*/.git/*", ".git/*", "*/__pycache__/*", "__pycache__/*", "*.pyc", "*.pyo",
                   "*/node_modules/*", "*.so", "*.o", "*.a", "*.dylib", "*.dll", "*.exe",
                   "*.whl", "*.egg", "*.zip", "*.gz", "*.png", "*.jpg", "*.gif", "*.ico"]
SNIFF_BYTES = 8192
_SPECIAL = {stat.S_IFIFO: "named pipe (FIFO)", stat.S_IFSOCK: "socket",
            stat.S_IFCHR: "character device", stat.S_IFBLK: "block device",
            stat.S_IFDIR: "folder"}


RUN_FOLDER = "run_folder"


def _literal(pattern: str) -> str:
    """An fnmatch pattern's start before its first wildcard: every path it matches
    starts with it."""
    return re.split(r"[*?[]", pattern, maxsplit=1)[0]


def is_run_folder(folder: str) -> bool:
    """A lemur-data run folder: its manifest.json is a run record (has a `fingerprint`)."""
    record = os.path.join(folder, "manifest.json")
    try:
        if not os.path.isfile(record) or os.path.getsize(record) > 1 << 20:
            return False
        with open(record, "rb") as handle:
            recorded = json.loads(handle.read())
    except (OSError, ValueError):
        return False
    return isinstance(recorded, dict) and "fingerprint" in recorded


class TreeParams(ReaderParams):
    type: Literal["tree"]
    root: LocalPath
    """Folder to walk (local). Placeholders such as {stdlib} and {purelib} work."""
    subdirs: list[str] | None = None
    """Walk only these folders below root (those missing are skipped); default: all."""
    include: list[str] = ["*"]
    """fnmatch patterns on the path below root (`*` also crosses folders). Folders no
    pattern can reach (by its start before the first wildcard), and folders an exclude
    pattern ending in `*` covers whole, are not walked."""
    exclude: list[str] = DEFAULT_EXCLUDE
    repo_depth: int = 0
    """Path components below root that name a repo (0: the root itself is the repo)."""
    license: str | None = None
    """Fixed license for every file; otherwise the repo's installed package metadata
    (`*.dist-info/METADATA` beside it), else its LICENSE file."""
    follow_symlinks: bool = False
    """Read what a symlink to a file points to (a link to a folder is never walked, so a
    loop cannot hang the walk). Off: each symlink is an `ingest:symlink` record."""


class FilesParams(ReaderParams):
    type: Literal["files"]
    paths: list[LocalPath]
    """Files or glob patterns (local or fsspec URLs), one document per file."""


class TreeReader(Reader[TreeParams]):
    Params = TreeParams

    def plan(self, max_docs: int, max_bytes: int) -> list[InputUnit]:
        root = self.params.root
        if not os.path.isdir(root):
            raise ReaderError(f"{self.where}: reader.root {root!r} is not a folder")
        tops = [root] if self.params.subdirs is None else [
            os.path.join(root, d) for d in sorted(self.params.subdirs)
            if os.path.isdir(os.path.join(root, d))]
        files = [item for top in tops for item in self._walk(root, top)]
        licenses = self._licenses(root, sorted({self._repo(rel) for rel, _, _ in files}))
        chunks = chunk_by(files, [size for _, size, _ in files], max_docs, max_bytes)
        return [InputUnit(self.source.name, i,
                          {"root": root, "files": chunk,
                           "licenses": {r: licenses[r] for r in
                                        {self._repo(f) for f, _, _ in chunk}}},
                          len(chunk), sum(s for _, s, _ in chunk))
                for i, chunk in enumerate(chunks)]

    def files(self, unit: InputUnit) -> list[str]:
        """The files the unit reads (pipeline/listing.py stamps them)."""
        return [os.path.join(unit.payload["root"], rel) for rel, _, _ in unit.payload["files"]]

    def _licenses(self, root: str, repos: list[str]) -> dict[str, str | None]:
        if self.params.license is not None:
            return {repo: self.params.license for repo in repos}
        packages = PackageLicenses(root, _license_in_text)
        return {repo: (repo and packages.license(repo.rsplit("/", 1)[-1]))
                or _license_of(os.path.join(root, repo)) for repo in repos}

    def _walk(self, root: str, top: str) -> Iterator[tuple[str, int, str | None]]:
        """(path below root, size, why it is skipped or None) of every selected entry.

        Only regular files are read: opening a FIFO blocks forever, and sockets and
        devices are no documents. Those, and symlinks not followed, become records
        with their reason, so nothing in the tree disappears without a word.
        """
        unreadable: list[OSError] = []
        for folder, dirs, names in os.walk(top, onerror=unreadable.append):
            yield from self._unreadable(root, unreadable)
            dirs.sort()
            # relpath once per folder, not per file: it normalizes both paths each call
            base = os.path.relpath(folder, root).replace(os.sep, "/")
            prefix = "" if base == "." else base + "/"
            for run in [d for d in dirs if is_run_folder(os.path.join(folder, d))]:
                dirs.remove(run)  # an earlier run's card, manifest and shards: not input
                yield (prefix + run, 0, f"{RUN_FOLDER}: a lemur-data run folder (its "
                       "manifest.json has a fingerprint); not read back in as input")
            linked = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
            # not walked: a folder where nothing can be selected (the stdlib's 8,700
            # folders for a few packages' `include`; every __pycache__)
            dirs[:] = [d for d in dirs if self._may_select(prefix + d + "/")]
            for name in sorted(names + linked):
                rel = prefix + name
                if not self._selected(rel):
                    continue
                yield rel, *self._entry(os.path.join(folder, name))
        yield from self._unreadable(root, unreadable)  # the last folder's errors come late

    @staticmethod
    def _unreadable(root: str, errors: list[OSError]) -> Iterator[tuple[str, int, str]]:
        """A subfolder os.walk could not list (no permission, gone): a record, not a loss."""
        while errors:
            error = errors.pop(0)
            where = os.path.relpath(str(error.filename), root).replace(os.sep, "/")
            yield where, 0, f"unreadable: folder not listed ({error.strerror})"

    def _entry(self, full: str) -> tuple[int, str | None]:
        try:
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                if not self.params.follow_symlinks:
                    return 0, (f"symlink to {os.readlink(full)} (not followed: set "
                               "reader.follow_symlinks to read it)")
                info = os.stat(full)
                if stat.S_ISDIR(info.st_mode):
                    return 0, f"symlink to the folder {os.readlink(full)} (never walked)"
        except OSError as error:  # a dangling link, or gone since the listing
            return 0, f"unreadable: {error.strerror}"
        if not stat.S_ISREG(info.st_mode):
            return 0, _SPECIAL.get(stat.S_IFMT(info.st_mode), "not a regular file")
        return info.st_size, None

    def _may_select(self, folder: str) -> bool:
        """Whether a path below `folder` (ending in "/") can be selected: an include
        pattern's literal start agrees with it, and no exclude pattern ending in `*`
        matches everything below it (`*` crosses folders: "*/__pycache__/*")."""
        return (any(_literal(p).startswith(folder) or folder.startswith(_literal(p))
                    for p in self.params.include)
                and not any(p.endswith("*") and fnmatchcase(folder, p[:-1])
                            for p in self.params.exclude))

    def _selected(self, rel: str) -> bool:
        return (any(fnmatchcase(rel, p) for p in self.params.include)
                and not any(fnmatchcase(rel, p) for p in self.params.exclude))

    def _repo(self, rel: str) -> str:
        depth = self.params.repo_depth
        if depth == 0:
            return ""
        parts = rel.split("/")[:-1]
        return "/".join(parts[:depth])

    def read(self, unit: InputUnit) -> pa.Table:
        rows = RowCollector(self.source)
        root = unit.payload["root"]
        base = os.path.basename(os.path.normpath(root))
        for rel, size, skipped in unit.payload["files"]:
            repo = self._repo(rel)
            license_ = self.params.license or unit.payload["licenses"].get(repo)
            if skipped is not None:
                reason = ("symlink" if skipped.startswith("symlink") else "unreadable_file"
                          if skipped.startswith("unreadable") else RUN_FOLDER
                          if skipped.startswith(RUN_FOLDER) else "not_regular_file")
                rows.add(rel, "", reason, f"{rel}: {skipped}", path=rel, repo=repo or base,
                         license=license_)
                continue
            read_file_document(rows, os.path.join(root, rel), rel, size, self.source,
                               repo=repo or base, license=license_)
        return rows.table()


class FilesReader(Reader[FilesParams]):
    Params = FilesParams

    def plan(self, max_docs: int, max_bytes: int) -> list[InputUnit]:
        files = expand_paths(self.params.paths, self.where)
        sizes = [file_size(path) for path, _ in files]
        chunks = chunk_by(list(zip(files, sizes, strict=True)), sizes, max_docs, max_bytes)
        return [InputUnit(self.source.name, i, {"files": chunk}, len(chunk),
                          sum(s for _, s in chunk)) for i, chunk in enumerate(chunks)]

    def files(self, unit: InputUnit) -> list[str]:
        return [path for (path, _), _ in unit.payload["files"]]

    def read(self, unit: InputUnit) -> pa.Table:
        rows = RowCollector(self.source)
        for (path, rel), size in unit.payload["files"]:
            read_file_document(rows, path, rel, size, self.source)
        return rows.table()


def read_file_document(rows: RowCollector, path: str, rel: str, size: int,
                       source: SourceInfo, **fields: str | None) -> None:
    """Add one file as a document, or as a quarantine record with its reason."""
    if size > source.max_doc_bytes:
        rows.add(rel, "", "too_large", f"{size} bytes > max_doc_bytes {source.max_doc_bytes}",
                 path=rel, **fields)
        return
    try:
        with fsspec.open(path, "rb") as handle:
            # bounded: a file that grew after planning is never read whole
            raw = handle.read(source.max_doc_bytes + 1)
    except OSError as error:
        rows.add(rel, "", "unreadable_file", f"{path}: {error}", path=rel, **fields)
        return
    if len(raw) > source.max_doc_bytes:
        rows.add(rel, "", "too_large", f"grew past max_doc_bytes {source.max_doc_bytes} "
                 f"after planning ({size} bytes then)", path=rel, **fields)
        return
    unicode = decode_bom(raw)
    if unicode is not None:  # UTF-16/32 with a BOM holds NUL bytes and is text all the same
        text, bad = unicode
        if bad is None:
            raw = text.encode("utf-8", "surrogatepass")
    elif b"\x00" in raw[:SNIFF_BYTES]:
        rows.add(rel, "", "binary", "NUL byte in the first 8 KiB", path=rel, **fields)
        return
    else:
        text, bad = decode_text(raw)
    bad_utf8 = bad
    lang = source.lang
    if lang is None and source.kind == "code":
        lang = detect_code_language(rel, raw)
    rows.add(rel, text, "invalid_utf8" if bad_utf8 else None, bad_utf8, path=rel, lang=lang,
             **fields)


_LICENSE_FILE = re.compile(r"^(LICEN[CS]E|COPYING)(\.(txt|md|rst))?$", re.IGNORECASE)
_LICENSE_MARKERS = [
    ("Apache-2.0", "Apache License"), ("MIT", "Permission is hereby granted, free of charge"),
    ("GPL-3.0", r"GNU GENERAL PUBLIC LICENSE\n\s*Version 3"),
    ("GPL-2.0", r"GNU GENERAL PUBLIC LICENSE\n\s*Version 2"),
    ("LGPL", "GNU LESSER GENERAL PUBLIC LICENSE"), ("MPL-2.0", "Mozilla Public License"),
    ("BSD-3-Clause", "Neither the name"), ("BSD-2-Clause", "Redistributions in binary form"),
    ("PSF-2.0", "PYTHON SOFTWARE FOUNDATION LICENSE"), ("ISC", "ISC License"),
    ("Unlicense", "This is free and unencumbered software"),
]


def _license_of(folder: str) -> str | None:
    """SPDX-like id of the license file at the top of a repo folder, if recognizable."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    for name in names:
        # isfile: a FIFO named LICENSE would block open() forever
        if _LICENSE_FILE.match(name) and os.path.isfile(os.path.join(folder, name)):
            with open(os.path.join(folder, name), "rb") as handle:
                text = handle.read(20000).decode("utf-8", "replace")
            return _license_in_text(text) or "unknown"
    return None


def _license_in_text(text: str) -> str | None:
    for spdx, marker in _LICENSE_MARKERS:
        if re.search(marker, text, re.IGNORECASE):
            return spdx
    return None
