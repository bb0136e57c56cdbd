"""Rules for data, markup and prose formats: an XML declaration near the top, HTML's
visible text, plain text kept only under a few file names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from .base import CodeDoc, CodeRule, doc


@dataclass(frozen=True)
class XmlHeader(CodeRule):
    """StarCoder: an XML declaration near the top marks a data file, whatever its extension."""

    xml_header_chars: int | None = field(default=100, metadata=doc(
        "Drop files with `<?xml version=` in their first this many characters (100)."))
    reasons = ("xml_header",)

    def check(self, d: CodeDoc) -> str | None:
        if self.xml_header_chars is None:
            return None
        return "xml_header" if "<?xml version=" in d.text[: self.xml_header_chars] else None


@dataclass(frozen=True)
class TextFileName(CodeRule):
    """StarCoder2: plain text is kept only under names that say it documents code
    (`requirements*.txt`, README, NOTES, TODO, DESCRIPTION, CMakeLists)."""

    keep_names_containing: tuple[str, ...] | None = field(default=None, metadata=doc(
        "Keep only files whose lower-cased file name contains one of these, or whose "
        "stem is in `keep_name_stems` (StarCoder2, Text: `requirement`)."))
    keep_name_stems: tuple[str, ...] | None = field(default=None, metadata=doc(
        "Lower-case file names without their extension that are kept (StarCoder2, Text: "
        "readme, notes, todo, description, cmakelists)."))
    reasons = ("text_file_name",)

    def check(self, d: CodeDoc) -> str | None:
        if self.keep_names_containing is None and self.keep_name_stems is None:
            return None
        if not d.path:  # no file name to judge: the rule cannot apply
            return None
        name = d.path.replace("\\", "/").rsplit("/", 1)[-1].lower()
        stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
        if any(part in name for part in self.keep_names_containing or ()):
            return None
        if stem in (self.keep_name_stems or ()):
            return None
        d.detail = f"file name {name!r}"
        return "text_file_name"


class _VisibleText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style"):
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def visible_html_text(html: str) -> str:
    """Text a browser shows: everything outside tags, scripts and styles."""
    parser = _VisibleText()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # noqa: BLE001 - malformed markup: what was read so far counts
        pass
    return "".join(parser.parts)


@dataclass(frozen=True)
class HtmlVisibleText(CodeRule):
    """StarCoder: HTML must show more than 100 characters and 20% of its bytes as text."""

    html_min_text_chars: int | None = field(default=None, metadata=doc(
        "HTML: least visible text, in characters (StarCoder: 100)."))
    html_min_text_fraction: float | None = field(default=None, metadata=doc(
        "HTML: least visible text as a share of the file (StarCoder: 0.2)."))
    html_bounds_kept: bool = field(default=False, metadata=doc(
        "Keep a page exactly at the bounds above (StarCoder2: 'at least'); false removes "
        "it (StarCoder's filter_html keeps only 'more than')."))
    reasons = ("html_visible_text",)

    def check(self, d: CodeDoc) -> str | None:
        if self.html_min_text_chars is None and self.html_min_text_fraction is None:
            return None
        shown = len(visible_html_text(d.text))
        if self.html_bounds_kept:  # StarCoder2: at least 100 characters and 20%
            short = self.html_min_text_chars is not None and shown < self.html_min_text_chars
            thin = (self.html_min_text_fraction is not None
                    and shown < self.html_min_text_fraction * max(len(d.text), 1))
        else:  # bigcode's filter_html: more than 100 characters and more than 20%
            short = self.html_min_text_chars is not None and shown <= self.html_min_text_chars
            thin = (self.html_min_text_fraction is not None
                    and shown <= self.html_min_text_fraction * max(len(d.text), 1))
        return "html_visible_text" if short or thin else None
