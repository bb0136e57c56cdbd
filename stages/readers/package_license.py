"""The licence an installed Python package declares, for the tree reader.

A site-packages folder holds each package's `*.dist-info` beside it. The package
folder (`numpy/`) is matched to its dist-info by the distribution's name, its
`top_level.txt`, or the first path components of its `RECORD`. The licence then
comes, in this order, from `METADATA`'s `License-Expression` (PEP 639), a short
`License:` field (`MIT`, `Apache 2.0`), the `License ::` classifiers, and the
licence files shipped in the dist-info (recognised by the same markers as a
repository's LICENSE file). None when the folder is no installed package.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from email.parser import BytesHeaderParser
from pathlib import Path

from ...filters.licenses import from_classifiers, from_field

_NAME = re.compile(r"[-_.]+")


def _normal(name: str) -> str:
    return _NAME.sub("_", name).lower()


class PackageLicenses:
    """Dist-infos of one folder, indexed once; `license(package)` looks one up."""

    def __init__(self, root: str, license_text: Callable[[str], str | None]) -> None:
        self._license_text = license_text  # a licence file's text -> SPDX id, or None
        self._dist_infos = sorted(Path(root).glob("*.dist-info")) if os.path.isdir(root) else []
        self._by_name: dict[str, Path] = {}
        for info in self._dist_infos:
            self._by_name.setdefault(_normal(info.name[: -len(".dist-info")].split("-")[0]), info)
            top_level = info / "top_level.txt"
            if top_level.is_file():
                for line in top_level.read_text(errors="replace").split():
                    self._by_name.setdefault(_normal(line), info)
        self._by_record: dict[str, Path] | None = None  # built on the first miss

    def license(self, package: str) -> str | None:
        info = self._dist_info(package)
        return self._declared(info) if info is not None else None

    def _dist_info(self, package: str) -> Path | None:
        key = _normal(package)
        if key in self._by_name:
            return self._by_name[key]
        if self._by_record is None:
            self._by_record = {}
            for info in self._dist_infos:
                record = info / "RECORD"
                if not record.is_file():
                    continue
                for line in record.read_text(errors="replace").splitlines():
                    top = line.split(",", 1)[0].split("/", 1)[0]
                    if top and not top.endswith(".dist-info") and top != "..":
                        self._by_record.setdefault(_normal(top.removesuffix(".py")), info)
        return self._by_record.get(key)

    def _declared(self, info: Path) -> str | None:
        metadata = info / "METADATA"
        if metadata.is_file():
            with open(metadata, "rb") as handle:
                headers = BytesHeaderParser().parse(handle)
            expression = headers.get("License-Expression")
            if expression and expression.strip():
                return " ".join(str(expression).split())
            field = from_field(headers.get("License"))
            if field:
                return field
            classified = from_classifiers(headers.get_all("Classifier") or [])
            if classified:
                return classified
        files = sorted(p for p in info.rglob("*") if p.is_file()
                       and re.match(r"(LICEN[CS]E|COPYING)", p.name, re.IGNORECASE))
        for path in files:
            found = self._license_text(path.read_text(errors="replace")[:20000])
            if found:
                return found
        return None
