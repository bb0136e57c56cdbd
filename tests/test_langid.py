"""Language ID on real data: translated man pages, shell scripts, C/C++ headers, a Ray build."""

from __future__ import annotations

import gzip
import json
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lemur_data.filters.langid.code import detect_code_language
from lemur_data.filters.langid.text import FastTextLanguageID, default_model_path
from lemur_data.stages.base import ShardContext
from lemur_data.stages.langid import LangId, LangIdParams
from lemur_data.stages.storage import documents_table
from tests.fixtures import fixture
from tests.realdata import PURELIB, STDLIB, prose_paragraphs, write_jsonl
from tests.runs import removed_reasons, run_build

if TYPE_CHECKING:
    from lemur_data.pipeline.manifest import Manifest

# man page folder -> lid.176 label (fixtures: Debian's manpages, manpages-de/-fr/-es/-ru/-ja/-zh)
MAN_LANGUAGES = {"": "en", "de": "de", "fr": "fr", "es": "es", "ru": "ru", "ja": "ja",
                 "zh_CN": "zh"}
MAN_FIXTURES = {"": "manpages", "de": "manpages-de", "fr": "manpages-fr", "es": "manpages-es",
                "ru": "manpages-ru", "ja": "manpages-ja", "zh_CN": "manpages-zh"}
# Extensionless scripts: the bin folders of Debian's gzip, debianutils, xdg-utils and ucf.
SHELL_BINS = [("gzip", "bin"), ("debianutils", "bin"), ("debianutils", "usr/bin"),
              ("debianutils", "usr/sbin"), ("xdg-utils", "usr/bin"), ("ucf", "usr/bin")]
CTX = ShardContext("test", "/tmp", 0)

_ESCAPE = re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)|\\\(..|\\\[[^\]]*\]|\\[&|^~/,%:]|\\s[-+]?\d")


def roff_paragraphs(page: Path, min_chars: int = 200) -> list[str]:
    """Running text of a man page: macro lines end paragraphs, inline escapes go."""
    try:
        source = gzip.decompress(page.read_bytes()).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    paragraphs, current = [], []
    for line in source.splitlines():
        if line.startswith((".", "'")):
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        text = _ESCAPE.sub("", line).replace("\\-", "-").replace("\\e", "\\").strip()
        if text:
            current.append(text)
    if current:
        paragraphs.append(" ".join(current))
    return [p for p in paragraphs if len(p) >= min_chars]


_ENGLISH = re.compile(r"\b(?:the|and|of|to|is|with|that)\b")


def is_prose(paragraph: str, translated: bool) -> bool:
    """Running text, not a command example; in a translation, not left in English.

    Translated pages keep some paragraphs untranslated: English is then the right answer,
    so they are not counted as the translation's language.
    """
    letters = sum(ch.isalpha() for ch in paragraph) / len(paragraph)
    return letters >= 0.6 and not (translated and len(_ENGLISH.findall(paragraph)) >= 3)


def man_paragraphs(folder: str, limit: int = 60, per_page: int = 2) -> list[str]:
    """Up to `limit` prose paragraphs from the pages of one language: section 1 first,
    then the other sections, each in sorted order."""
    base = fixture(MAN_FIXTURES[folder]) / "usr" / "share" / "man" / folder
    pages = sorted(base.glob("man1/*.gz")) + sorted(base.glob("man[2-9]/*.gz"))
    assert pages, f"no man pages in {base}"
    found: list[str] = []
    for page in pages:
        found += [p for p in roff_paragraphs(page) if is_prose(p, bool(folder))][:per_page]
        if len(found) >= limit:
            break
    return found[:limit]


@pytest.fixture(scope="module")
def lid() -> FastTextLanguageID:
    model = FastTextLanguageID()
    model.model  # noqa: B018 - load once for the module
    return model


def test_default_model_is_the_packaged_lid176() -> None:
    path = Path(default_model_path())
    assert path.name == "lid.176.ftz" and path.stat().st_size > 500_000


@pytest.mark.parametrize("folder", sorted(MAN_LANGUAGES))
def test_man_page_paragraphs_identified(lid: FastTextLanguageID, folder: str) -> None:
    paragraphs = man_paragraphs(folder)
    assert len(paragraphs) >= 30, f"only {len(paragraphs)} paragraphs in {folder or 'en'}"
    langs, scores = lid.predict(paragraphs)
    expected = MAN_LANGUAGES[folder]
    right = sum(lang == expected for lang in langs) / len(langs)
    # Real translated paragraphs still quote English option names and commands.
    misses = [(lng, p[:80]) for lng, p in zip(langs, paragraphs, strict=True) if lng != expected]
    assert right >= 0.95, (folder, right, misses[:5])
    confident = [s for lang, s in zip(langs, scores, strict=True) if lang == expected]
    assert sorted(confident)[len(confident) // 2] > 0.8


def _text_docs() -> pa.Table:
    rows = []
    for folder, label in sorted(MAN_LANGUAGES.items()):
        for j, para in enumerate(man_paragraphs(folder, limit=8)):
            rows.append({"id": f"{label}-{j}", "text": para, "source": f"man-{label}",
                         "kind": "text", "lang": None})
    return documents_table(rows)


def test_stage_keeps_listed_languages_and_records_scores() -> None:
    docs = _text_docs()
    stage = LangId(LangIdParams.model_validate(
        {"text": {"keep": ["en"], "threshold": 0.65,
                  "per_source": {"man-de": {"keep": ["de", "en"], "threshold": 0.5}}}}))
    stage.setup()
    result = stage.apply(docs, CTX)
    table, reasons = result.table, result.reasons.to_pylist()
    assert table.column("id").to_pylist() == docs.column("id").to_pylist()
    sources, langs = table.column("source").to_pylist(), table.column("lang").to_pylist()
    scores = table.column("lang_score").to_pylist()
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    kept_by_source: dict[str, int] = {}
    for source, reason in zip(sources, reasons, strict=True):
        kept_by_source[source] = kept_by_source.get(source, 0) + (reason is None)
    assert kept_by_source["man-de"] >= 7 and kept_by_source["man-en"] >= 6
    for other in ("man-fr", "man-es", "man-ru", "man-ja", "man-zh"):
        assert kept_by_source[other] <= 1, (other, kept_by_source)
    dropped = [(lng, r) for lng, r in zip(langs, reasons, strict=True) if r is not None]
    assert {r for _, r in dropped} <= {"language_not_kept", "low_language_score"}
    assert any(lng == "ja" for lng, r in dropped if r == "language_not_kept")


def test_threshold_is_applied_to_the_top_score() -> None:
    docs = _text_docs()
    strict = LangId(LangIdParams.model_validate({"text": {"keep": None, "threshold": 0.999}}))
    result = strict.apply(docs, CTX)
    scores = result.table.column("lang_score").to_pylist()
    for score, reason in zip(scores, result.reasons.to_pylist(), strict=True):
        assert (reason == "low_language_score") == (score < 0.999)


def _shell_scripts(limit: int = 40) -> list[Path]:
    found = []
    folders = [fixture(name) / sub for name, sub in SHELL_BINS]
    for path in sorted((p for f in folders if f.is_dir() for p in f.iterdir()),
                       key=lambda p: p.name):
        if "." in path.name or not path.is_file() or not path.stat().st_mode & stat.S_IXUSR:
            continue
        head = path.open("rb").read(64)
        if re.match(rb"#!\s*/(?:usr/)?bin/(?:env\s+)?(?:ba|da)?sh\b", head):
            found.append(path)
    return found[:limit]


def test_extensionless_shell_scripts_identified_by_shebang() -> None:
    scripts = _shell_scripts()
    assert len(scripts) >= 20
    for path in scripts:
        head = path.read_bytes()[:4096]
        assert detect_code_language(path.name, head) == "Shell", path
        assert detect_code_language(path.name, b"") is None  # the name alone says nothing


def _debian_package(name: str) -> Path:
    """A Debian package of tests/fixtures/fetch.py, unpacked as under `/`."""
    from tests.fixtures import fixture

    return fixture(name)


def test_bash_completion_scripts_identified_by_their_modelines() -> None:
    """Debian's bash-completion scripts have no extension and no shebang; the package
    says they are shell, and so do their Emacs (`# -*- shell-script -*-`, first line)
    and Vim (`# ex: filetype=sh`, last line) modelines. Either one suffices."""
    import enry

    folder = _debian_package("bash-completion") / "usr/share/bash-completion/completions"
    scripts = [p for p in sorted(folder.iterdir()) if p.is_file() and not p.is_symlink()]
    assert len(scripts) >= 400
    for path in scripts:
        data = path.read_bytes()
        assert not data.startswith(b"#!"), path
        assert detect_code_language(path.name, data) == "Shell", path
        emacs_only = data.replace(b"ex: filetype=sh", b"")
        assert detect_code_language(path.name, emacs_only) == "Shell"
        vim_only = data.replace(b"shell-script", b"")
        assert detect_code_language(path.name, vim_only) == "Shell"
        bare = vim_only.replace(b"ex: filetype=sh", b"")
        if "." not in path.name and not enry.get_language_by_filename(path.name).language:
            assert detect_code_language(path.name, bare) is None, path


def test_modelines_shebangs_and_ambiguous_extensions() -> None:
    """The forms of each rule, on lines from real files."""
    cases = {
        ("x", b"# -*- mode: python; coding: utf-8 -*-\n"): "Python",
        ("x", b"/* -*- Mode: C; tab-width: 4 -*- */\n"): "C",
        ("x.h", b"// -*- C++ -*- forwarding header.\n"): "C++",
        ("x", b"# vim: set ft=ruby ts=2 :\n"): "Ruby",
        ("x", b"# -*- coding: utf-8 -*-\n"): None,  # variables only, no mode
        ("x", b"# vim: set ts=4 sw=4:\n"): None,
        ("x", b"#!/bin/env -S python3 -u\n"): "Python",
        ("x", b"#!/bin/env LC_ALL=C perl -w\n"): "Perl",
        ("x", b"#! /bin/sh -e\n"): "Shell",
        ("x", b"#!/usr/local/bin/python3.11\n"): "Python",
        ("bin.d.ts", b"#!/bin/env node\nexport {};\n"): "TypeScript",
        ("app_de.ts", b'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE TS>\n'
                      b'<TS version="2.1" language="de_DE">\n'): "XML",
        ("Gemfile", b"source 'https://rubygems.org'\n"): "Ruby",
        ("PKGBUILD", b"pkgname=x\n"): "Shell",
    }
    for (name, head), language in cases.items():
        assert detect_code_language(name, head) == language, (name, head)


def test_python_entry_points_identified_by_shebang() -> None:
    bindir = Path(pytest.__file__).parents[4] / "bin"
    scripts = [p for p in sorted(bindir.iterdir()) if p.is_file() and "." not in p.name
               and p.read_bytes()[:2] == b"#!" and b"python" in p.read_bytes()[:200]]
    assert len(scripts) >= 3
    assert all(detect_code_language(p.name, p.read_bytes()[:4096]) == "Python" for p in scripts)


def test_headers_resolved_by_content() -> None:
    # Kernel UAPI headers are C; libstdc++'s (bits/stl_*.h) are C++.
    c_headers = sorted((fixture("linux-libc-dev") / "usr/include/linux").glob("*.h"))[:80]
    cpp_headers = sorted((fixture("libstdc++-12-dev") / "usr/include/c++").glob(
        "*/bits/stl_*.h"))[:30]
    assert len(c_headers) >= 40 and len(cpp_headers) >= 10
    as_c = [detect_code_language(p.name, p.read_bytes()[:16384]) for p in c_headers]
    assert as_c.count("C") / len(as_c) >= 0.97
    as_cpp = [detect_code_language(p.name, p.read_bytes()[:16384]) for p in cpp_headers]
    assert as_cpp.count("C++") / len(as_cpp) >= 0.9


def test_linguist_names_cover_the_stacks_main_languages() -> None:
    """go-enry resolves The Stack's names of its main languages to themselves, and a
    notebook kernel's names to linguist's."""
    from lemur_data.filters.langid.code import language_by_name

    main = ["Python", "JavaScript", "TypeScript", "Java", "C", "C++", "C#", "Go", "Rust", "PHP",
            "Ruby", "Shell", "Kotlin", "Scala", "Swift", "Lua", "Perl", "R", "Julia", "Haskell",
            "SQL", "HTML", "CSS", "Markdown", "JSON", "YAML", "Dockerfile", "Makefile",
            "PowerShell", "Fortran", "Assembly", "Dart", "Elixir", "Erlang", "OCaml", "F#",
            "Visual Basic .NET", "Cuda", "TeX", "Jupyter Notebook"]
    assert {name: language_by_name(name) for name in main} == {name: name for name in main}
    assert [language_by_name(k) for k in ("python3", "csharp", "octave", "q", "bash")] == [
        "Python", "C#", "MATLAB", "q", "Shell"]
    assert language_by_name("no-such-language") is None


def test_code_documents_trust_lang_detect_missing_and_drop_unknown() -> None:
    py = (STDLIB / "json" / "decoder.py").read_text()
    script = _shell_scripts(1)[0]
    docs = documents_table([
        {"id": "a", "text": py, "source": "s", "kind": "code", "lang": "Python", "path": "x.txt"},
        {"id": "b", "text": py, "source": "s", "kind": "code", "lang": None,
         "path": "json/decoder.py"},
        {"id": "c", "text": script.read_text(errors="replace"), "source": "s", "kind": "code",
         "lang": None, "path": script.name},
        {"id": "d", "text": py, "source": "s", "kind": "code", "lang": None, "path": "notes.xyz"},
        {"id": "e", "text": py, "source": "s", "kind": "code", "lang": "JavaScript",
         "path": "a.js"},
    ])
    every = LangId(LangIdParams.model_validate({"code": {"keep": None}}))
    result = every.apply(docs, CTX)
    assert result.table.column("lang").to_pylist() == ["Python", "Python", "Shell", None,
                                                      "JavaScript"]
    assert result.reasons.to_pylist() == [None, None, None, "unknown_language", None]
    only = LangId(LangIdParams.model_validate({"code": {"keep": ["python", "Shell"]}}))
    assert only.apply(docs, CTX).reasons.to_pylist() == [
        None, None, None, "unknown_language", "language_not_kept"]


def test_build_on_ray_drops_other_languages(ray_session, tmp_path: Path) -> None:
    records = [{"text": p} for p in prose_paragraphs()[:20]]
    records += [{"text": p} for folder in ("de", "ja") for p in man_paragraphs(folder, 10)]
    write_jsonl(tmp_path / "mixed.jsonl", records)
    tree = tmp_path / "tree"  # code without a stated language: one file go-enry cannot place
    tree.mkdir()
    (tree / "decoder.py").write_text((STDLIB / "json" / "decoder.py").read_text())
    (tree / "notes.xyz").write_text((STDLIB / "json" / "encoder.py").read_text())
    manifest = {
        "name": "langid-test",
        "sources": [{"name": "mixed", "kind": "text",
                     "reader": {"type": "jsonl", "paths": [str(tmp_path / "mixed.jsonl")]}},
                    {"name": "tree", "kind": "code", "reader": {"type": "tree",
                                                                "root": str(tree)}}],
        "stages": [{"langid": {"text": {"keep": ["en"], "threshold": 0.5}}}],
    }
    run_dir = tmp_path / "run"
    run_build(manifest, tmp_path, run_dir)
    reasons = removed_reasons(run_dir)
    assert reasons.count("langid:language_not_kept") >= 18
    assert reasons.count("langid:unknown_language") == 1
    card = (run_dir / "README.md").read_text()
    stats = json.loads((run_dir / "stats.json").read_text())
    assert (f"{stats['code_language_detector']}, in The Stack v2's language names (linguist "
            "7.27's). Files it "
            "could not place: 1, removed.") in card
    kept = pa.concat_tables([pq.read_table(p) for p in sorted(
        (run_dir / "stages").glob("*langid*/*.parquet"))])
    assert set(kept.column("lang").to_pylist()) == {"en", "Python"}
    text_scores = [s for s, k in zip(kept.column("lang_score").to_pylist(),
                                     kept.column("kind").to_pylist(), strict=True) if k == "text"]
    assert len(text_scores) >= 15 and min(text_scores) >= 0.5


def test_typescript_declarations_with_a_node_shebang_stay_typescript() -> None:
    """An exception to go-enry: lib0's and mkdirp's `bin.d.ts` start with
    `#!/usr/bin/env node`; go-enry asks the shebang first (JavaScript), The Stack labels
    them by their extension (TypeScript), and the syntax stage must parse them so."""
    import enry

    mkdirp = "package/node_modules/cacache/node_modules/mkdirp"
    files = [fixture("lib0") / "package/bin/0serve.d.ts",
             fixture("npm") / mkdirp / "dist/cjs/src/bin.d.ts"]
    for path in files:
        data = path.read_bytes()
        assert data.startswith(b"#!") and b"node" in data.split(b"\n", 1)[0]
        assert enry.get_language(path.name, data) == "JavaScript"
        assert detect_code_language(str(path), data) == "TypeScript"


def test_scheme_files_are_scheme_as_the_stack_labels_them() -> None:
    """The other exception: enry-python's linguist data adds Tree-sitter Query for `.scm`,
    and its classifier calls some of Guile's own modules (ice-9/regex.scm,
    srfi/srfi-171.scm, ...) queries; The Stack v2's go-enry gave `.scm` to Scheme alone.
    Guile's modules and tree-sitter's own query files (py-tree-sitter grammars'
    queries/*.scm) are Scheme, as The Stack labels them."""
    import enry

    guile = fixture("guile-3.0-libs") / "usr/share/guile/3.0"
    modules = [guile / "ice-9/regex.scm", guile / "srfi/srfi-171.scm",
               guile / "ice-9/optargs.scm", guile / "sxml/xpath.scm"]
    queries = sorted(PURELIB.glob("tree_sitter_*/queries/*.scm"))[:10]
    assert len(queries) >= 5
    answered = {enry.get_language(p.name, p.read_bytes()) for p in modules + queries}
    assert "Tree-sitter Query" in answered  # go-enry's own answer, for some of them
    for path in modules + queries:
        assert detect_code_language(str(path), path.read_bytes()) == "Scheme", path


def test_syntax_grammars_are_named_in_linguist_names() -> None:
    from lemur_data.filters.langid.code import language_by_name
    from lemur_data.filters.syntax.check import GRAMMARS

    assert [language_by_name(name) for name in GRAMMARS] == list(GRAMMARS)


def test_unknown_code_is_dropped_or_kept() -> None:
    py = (STDLIB / "json" / "decoder.py").read_text()
    docs = documents_table([
        {"id": "a", "text": py, "source": "s", "kind": "code", "lang": None, "path": "notes.xyz"},
        {"id": "b", "text": py, "source": "s", "kind": "code", "lang": None, "path": "a/b.py"}])
    drop = LangId(LangIdParams.model_validate({"text": None, "code": {}})).apply(docs, CTX)
    assert drop.reasons.to_pylist() == ["unknown_language", None]
    kept = LangId(LangIdParams.model_validate({"text": None, "code": {"unknown": "keep"}}))
    result = kept.apply(docs, CTX)
    assert result.reasons.to_pylist() == [None, None]
    assert result.table.column("lang").to_pylist() == [None, "Python"]


def test_without_go_enry_a_manifest_that_needs_detection_fails(tmp_path: Path) -> None:
    """On a machine where enry-python does not load (no wheel for Linux aarch64), a code
    source without a language fails validation naming the reason; one with `lang:` passes.
    Run in a fresh interpreter where `import enry` fails, as it does there."""
    import subprocess
    import sys

    (tmp_path / "a.py").write_text("print(1)\n")
    script = f"""
import sys
sys.modules["enry"] = None  # what a machine without the wheel sees: ImportError
from lemur_data.pipeline.manifest import ManifestError, parse_manifest
base = {{"name": "m", "sources": [{{"name": "c", "kind": "code",
         "reader": {{"type": "files", "paths": [{str(tmp_path)!r}]}}}}]}}
try:
    parse_manifest(base, "m", None)
except ManifestError as error:
    print("ERROR", error)
base["sources"][0]["lang"] = "Python"
print("FIXED", parse_manifest(base, "m", None).fingerprint())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert "ERROR" in out and "sources ['c']" in out and "enry-python" in out, out
    assert "FIXED" in out


@pytest.mark.slow
def test_code_language_on_a_second_set_of_packages() -> None:
    """go-enry on 2,176 files in 233 languages from packages no list holds: Debian
    packages of one language each and Pygments' example files, each labelled by what
    its package states (tests/calibration/langid_second.py). Measured 0.9701 (the issue
    asks 0.97); the misses are go-enry's own (docs/stages.md)."""
    from tests.calibration import langid_second

    right, total, wrong = langid_second.measure()
    files = sum(total.values())
    assert files >= 2000 and len(total) >= 100, (files, len(total))
    assert sum(right.values()) / files >= 0.97, (sum(right.values()) / files, wrong[:20])
    for language, count in total.items():
        if count >= 20:  # Octave's `.m` files: 74% MATLAB, the rest M (MUMPS) and others
            assert right[language] / count >= 0.7, (language, right[language], count)


def test_keep_names_resolve_to_linguists_and_unknown_names_fail(tmp_path: Path) -> None:
    from lemur_data.pipeline.manifest import ManifestError, parse_manifest

    code = LangIdParams.model_validate(
        {"code": {"keep": ["python", "c++", "CUDA", "Jupyter Notebook"]}}).code
    assert code is not None and code.keep == ["Python", "C++", "Cuda", "Jupyter Notebook"]
    base = {"name": "k", "sources": [{"name": "s", "kind": "code", "lang": "Python",
                                      "reader": {"type": "files", "paths": [str(tmp_path)]}}]}
    with pytest.raises(ManifestError, match=r"stages\[0\]\.langid\.code\.keep.*pyhton"):
        parse_manifest({**base, "stages": [{"langid": {"code": {"keep": ["pyhton"]}}}]},
                       base_dir=tmp_path)



def _documents(manifest: Manifest) -> pa.Table:
    """Every source's documents, read unit by unit as a build reads them, in the
    documents table's columns."""
    from lemur_data.stages.ingest import plan_units, read_unit

    docs = pa.concat_tables(
        read_unit(s.reader, s.info(), unit) for s in manifest.sources
        for unit in plan_units(s.reader, s.info(), 100, 2**30))
    return docs.drop_columns([c for c in docs.column_names
                              if c not in documents_table([]).column_names])

def test_renamed_languages_meet_under_the_stacks_names(tmp_path: Path) -> None:
    """enry-python's linguist data renamed Coq (Rocq Prover), Mathematica (Wolfram
    Language), FreeBasic (FreeBASIC), Genero (Genero 4gl), Genero Forms (Genero per).
    Real Pygments example files go-enry places, a Stack-v2-like parquet whose mapped
    `language` column says Coq (or, as a newer labelling would, Rocq Prover), and a
    source with `lang: Wolfram Language` end up under The Stack's names; `code.keep` and
    quality's `languages:` in either spelling reach all of them."""
    import enry

    from lemur_data.filters.langid.code import language_by_extension, stack_name
    from lemur_data.pipeline.manifest import parse_manifest
    from lemur_data.stages.quality.code_params import CodeQualityParams, CodeThresholdTable

    examples = fixture("pygments") / "pygments-2.18.0/tests/examplefiles"
    coq, mathematica = examples / "verilog/example_coq.v", examples / "mathematica/example.ma"
    for path, new, old in ((coq, "Rocq Prover", "Coq"),
                           (mathematica, "Wolfram Language", "Mathematica")):
        assert enry.get_language(path.name, path.read_bytes()) == new  # go-enry's own name
        assert detect_code_language(str(path), path.read_bytes()) == old
    # No real FreeBASIC or Genero file in the fixtures: their extensions and names.
    assert [language_by_extension(e) for e in (".bi", ".4gl", ".per")] == [
        "FreeBasic", "Genero", "Genero Forms"]
    assert [stack_name(n) for n in ("FreeBASIC", "genero 4gl", "Genero per", "Python")] == [
        "FreeBasic", "Genero", "Genero Forms", "Python"]

    tree = tmp_path / "tree"
    tree.mkdir()
    for path in (coq, mathematica):
        (tree / path.name).write_bytes(path.read_bytes())
    pq.write_table(pa.table({
        "content": [coq.read_text(), coq.read_text(), mathematica.read_text()],
        "path": ["theories/Example.v", "theories/Other.v", "notebooks/example.ma"],
        "language": ["Coq", "Rocq Prover", "Mathematica"]}), tmp_path / "stack.parquet")
    manifest = parse_manifest({"name": "names", "sources": [
        {"name": "stack", "kind": "code", "columns": {"text": "content", "lang": "language"},
         "reader": {"type": "parquet", "paths": ["stack.parquet"]}},
        {"name": "tree", "kind": "code", "reader": {"type": "tree", "root": "tree"}},
        {"name": "fixed", "kind": "code", "lang": "Wolfram Language",
         "reader": {"type": "files", "paths": [str(tree / mathematica.name)]}}]},
        "m", tmp_path)
    assert manifest.sources[2].lang == "Mathematica"
    docs = _documents(manifest)
    labels = docs.column("lang").to_pylist()
    assert sorted(labels) == ["Coq", "Coq", "Coq", "Mathematica", "Mathematica", "Mathematica"]

    for keep in (["Coq", "Mathematica"], ["Rocq Prover", "wolfram language"], ["coq", "mma"]):
        stage = LangId(LangIdParams.model_validate({"code": {"keep": keep}}))
        assert stage.params.code is not None and stage.params.code.keep == [
            "Coq", "Mathematica"]
        assert stage.apply(docs, CTX).reasons.to_pylist() == [None] * 6, keep
    only_coq = LangId(LangIdParams.model_validate({"code": {"keep": ["Rocq Prover"]}}))
    assert sorted(filter(None, only_coq.apply(docs, CTX).reasons.to_pylist())) == [
        "language_not_kept"] * 3
    for key in ("Wolfram Language", "Mathematica"):
        table = CodeThresholdTable(CodeQualityParams.model_validate(
            {"languages": {key: {"max_line_length": 7}}}))
        assert table.get("Mathematica").max_line_length == 7
        assert table.get("wolfram language").max_line_length == 7
        assert table.get("Coq").max_line_length == 1000


# The Stack v1 (bigcode/the-stack-dedup) `lang` values linguist no longer has, each with a
# real file (Pygments' examples) in one of the extensions v1 gave it and the path it is
# stored under -> the name The Stack v2 and go-enry give.
STACK_V1_FILES = [
    ("FORTRAN", "fortranfixed/ahcon.f", "ahcon.f", "Fortran"),
    ("Matlab", "matlab/matlab_sample", "sample.matlab", "MATLAB"),
    ("Perl6", "perl6/test.p6", "test.p6", "Raku"),
    ("VimL", "vim/phpcomplete.vim", "phpcomplete.vim", "Vim Script"),
    ("Bro", "zeek/test.bro", "test.bro", "Zeek"),
    ("Cucumber", "cucumber/example.feature", "example.feature", "Gherkin"),
    ("PAWN", "pawn/test.pwn", "test.pwn", "Pawn"),
    ("Nimrod", "nim/example.nim", "example.nim", "Nim"),
    ("JSX", "jsx/general.jsx", "general.jsx", "JavaScript"),
    ("Arduino", "arduino/Blink.ino", "Blink.ino", "C++"),
    ("MediaWiki", "wikitext/article_france.wikitext", "article_france.mediawiki", "Wikitext"),
    ("RHTML", "rhtml/example.rhtml", "example.rhtml", "HTML+ERB"),
]


def test_the_stack_v1_names_meet_the_stack_v2_names(tmp_path: Path) -> None:
    """A source laid out as The Stack v1 (bigcode/the-stack-dedup's columns) whose `lang`
    column carries v1's names (bigcode-dataset's language selection: FORTRAN, Perl6,
    VimL, ...) reads them as The Stack v2's, the names go-enry gives the same files, so
    `code.keep` in v2's names keeps them; a v1 name with no one successor (Visual Basic)
    stays as written. Groff is Roff by linguist's alias (go-enry calls a man page Roff
    Manpage, so the row is not compared with detection)."""
    from lemur_data.filters.langid.code import STACK_V1_NAMES, stack_name
    from lemur_data.pipeline.manifest import parse_manifest
    from tests.test_lemur_sources import STACK_SCHEMA

    examples = fixture("pygments") / "pygments-2.18.0/tests/examplefiles"
    files = [*STACK_V1_FILES, ("Groff", "groff/perlfunc.1", "perlfunc.1", "Roff"),
             ("Visual Basic", "vb.net/vbnet_test.bas", "vbnet_test.bas", "Visual Basic")]
    rows = []
    for i, (v1, example, name, _) in enumerate(files):
        content = (examples / example).read_text()
        rows.append({"hexsha": f"{i:040x}", "size": len(content.encode()),
                     "ext": name.rpartition(".")[2], "lang": v1,
                     "max_stars_repo_path": f"src/{name}",
                     "max_stars_repo_name": "pygments/pygments",
                     "max_stars_repo_head_hexsha": "0" * 40,
                     "max_stars_repo_licenses": ["BSD-2-Clause"], "max_stars_count": i,
                     "content": content, "avg_line_length": 30.0, "max_line_length": 99,
                     "alphanum_fraction": 0.7})
    path = tmp_path / "the-stack-dedup/data/mixed/data-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=STACK_SCHEMA), path)
    manifest = parse_manifest({"name": "v1", "sources": [
        {"name": "stack-v1", "kind": "code", "reader": {"type": "parquet", "paths": [str(path)]},
         "columns": {"text": "content", "path": "max_stars_repo_path",
                     "repo": "max_stars_repo_name", "stars": "max_stars_count",
                     "license": "max_stars_repo_licenses", "lang": "lang"}},
        {"name": "vim", "kind": "code", "lang": "VimL",
         "reader": {"type": "files", "paths": [str(examples / "vim/phpcomplete.vim")]}}]},
        "m", tmp_path)
    assert manifest.sources[1].lang == "Vim Script"
    docs = _documents(manifest)
    assert docs.column("lang").to_pylist() == [v2 for *_, v2 in files] + ["Vim Script"]
    for (v1, _, name, v2), doc in zip(STACK_V1_FILES, docs.to_pylist()[:len(STACK_V1_FILES)],
                                      strict=True):
        assert STACK_V1_NAMES[v1] == stack_name(v1.lower()) == v2
        assert detect_code_language(doc["path"], doc["text"].encode()) == v2, name

    keep = sorted({v2 for *_, v2 in files} - {"Visual Basic"})
    stage = LangId(LangIdParams.model_validate({"code": {"keep": keep}}))
    assert stage.apply(docs, CTX).reasons.to_pylist() == (
        [None] * (len(files) - 1) + ["language_not_kept", None])
