"""A validation set kept apart from calibration, split by package, and its measure.

    python -m tests.calibration.validation list [LANGUAGE ...]     # validation/<Language>.txt
    python -m tests.calibration.validation label [LANGUAGE ...]    # oracle labels, stored
    python -m tests.calibration.validation measure [LANGUAGE ...]  # the docs/stages.md table

Files come from the packages of tests/fixtures/fetch.py (one folder per package in
the fixtures cache; npm's node_modules split per module; Go's and the JDK's
standard libraries split per package directory), so a fresh machine gets them by
running the fetch script. Entries are `fixture:path` (`!member` in an archive). A package
is in the validation half when its name hashes odd (`in_validation`), so all of a
package's files sit in one half; the calibration lists draw from the other half.
Per language, up to 600 files spread over the packages (one file per package in
turn). A damaged copy counts where its language's oracle (oracle.py) rejects it;
languages without an oracle count copies by construction.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import zipfile
from collections import defaultdict
from pathlib import Path

from lemur_data.filters.langid.code import detect_code_language
from lemur_data.filters.syntax import check as syntax_check
from tests.calibration import corpus, damage, langid_second, oracle
from tests.fixtures.fetch import cache_dir, folder_name, names

HERE = Path(__file__).resolve().parent / "validation"
FIXTURES = cache_dir()
PER_LANGUAGE = 600
LANGUAGES = ["Python", "JavaScript", "TypeScript", "Java", "C", "C++", "Go", "Rust", "PHP",
             "Ruby", "Shell"]
# The syntax stage's lists: the code languages, and HTML and CSS (the detection sample,
# `detection_sample`, keeps to LANGUAGES).
SYNTAX_LANGUAGES = [*LANGUAGES, "HTML", "CSS"]
# Languages whose files `list` looks for among these name endings only (reading and
# detecting every file of the fixtures for them costs minutes; The Stack's extensions).
SUFFIXES = {"HTML": (".html", ".htm", ".xhtml", ".inc"), "CSS": (".css",)}
KINDS = corpus.DAMAGES + damage.KINDS
# Folders whose files are meant not to parse, or are not the language they look like.
EXCLUDE = ("/test/bad", "badsyntax", "/testdata/", "/lib2to3/tests/data", "/py2_",
           "/python2/", "/fixtures/invalid")


# Packages the validation half must hold, whatever their hash: kinds of file the
# calibration lists lack (extensionless bash-completion scripts with modelines, a
# Python 2.7 standard library: Jython's, inside its jar).
FORCED = frozenset(("fixture:bash-completion", "fixture:jython"))
# Archives read member by member: (fixture, archive inside it, member suffix).
ARCHIVES = (("jython", "usr/share/java/jython.jar", ".py"),
            ("openjdk-17-source", "usr/lib/jvm/openjdk-17/lib/src.zip", ".java"))
# One Debian package that is a whole ecosystem's standard library: its own packages
# (Go: a directory; Java: a directory of a module) are the packages.
SPLIT = frozenset(("golang-1.19-src", "openjdk-17-source"))


def in_validation(package: str) -> bool:
    if package in FORCED:
        return True
    return hashlib.sha1(package.encode()).digest()[0] % 2 == 1


def _fixture_names() -> dict[str, str]:
    """Fixture folder -> fixture name (`types+node` -> `@types/node`)."""
    return {folder_name(name): name for name in names()}


def packages() -> dict[str, list[str]]:
    """Package -> its files as `fixture:path` entries (`!member` inside an archive)."""
    found: dict[str, list[str]] = defaultdict(list)
    by_folder = _fixture_names()
    for name, archive, suffix in ARCHIVES:
        path = FIXTURES / folder_name(name) / archive
        if not path.is_file():
            continue
        with zipfile.ZipFile(path) as zipped:
            for member in sorted(zipped.namelist()):
                if member.endswith(suffix):
                    package = (f"java:{member.rsplit('/', 1)[0]}" if name in SPLIT
                               else f"fixture:{name}")
                    found[package].append(f"{name}:{archive}!{member}")
    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        name = by_folder.get(folder.name)
        if name is None or name in langid_second.FIXTURES:
            continue  # not a fixture of tests/fixtures/fetch.py, or the second set's
        for path in sorted(folder.rglob("*")):
            relative = str(path.relative_to(folder))
            parts = relative.split("/node_modules/")
            package = "fixture:" + name
            if name in SPLIT:
                package = "go:" + str(path.parent.relative_to(folder))
            elif len(parts) > 1:  # an npm dependency is a package of its own
                module = parts[-1].split("/")
                package = "npm:" + "/".join(module[:2] if module[0].startswith("@")
                                            else module[:1])
            found[package].append(f"{name}:{relative}")
    return found


def expand(entry: str) -> str:
    return corpus.expand(entry)


def read(entry: str) -> bytes:
    return corpus.read(entry)


def _language(entry: str) -> str | None:
    path = expand(entry)
    if any(part in path for part in EXCLUDE) or ("!" not in path and os.path.islink(path)):
        return None
    try:
        if "!" not in path and not (os.path.isfile(path) and corpus.MIN_BYTES
                                    <= os.path.getsize(path) <= corpus.MAX_BYTES):
            return None
        data = read(entry)
    except OSError:
        return None
    if not corpus.MIN_BYTES <= len(data) <= corpus.MAX_BYTES:
        return None
    if b"\0" in data[:4096] or not corpus._is_text(data[:4096]):
        return None
    if data.startswith(b"// errorcheck"):  # Go's test suite: meant to fail to compile
        return None
    return detect_code_language(path, data)


def write_lists(languages: list[str]) -> None:
    by_language: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    seen: set[str] = set()
    tuned = calibration_packages()
    suffixes = (tuple(s for language in languages for s in SUFFIXES[language])
                if all(language in SUFFIXES for language in languages) else None)
    for package, entries in sorted(packages().items()):
        if not in_validation(package) or package in tuned:
            continue
        for entry in entries:
            if suffixes is not None and not entry.lower().endswith(suffixes):
                continue
            real = entry if "!" in entry else os.path.realpath(expand(entry))
            if real in seen:
                continue
            language = _language(entry)
            if language in LANGUAGES:
                seen.add(real)
                by_language[language][package].append(entry)
    HERE.mkdir(exist_ok=True)
    for language in languages:
        per_package = by_language[language]
        chosen: list[tuple[str, str]] = []
        queues = {p: sorted(e) for p, e in sorted(per_package.items())}
        skipped: dict[str, list[str]] = {p: [] for p in queues}
        while len(chosen) < PER_LANGUAGE and any(queues.values()):
            for package, queue in queues.items():
                if queue and len(chosen) < PER_LANGUAGE:
                    # Spread over the package: every k-th file, not the first ones.
                    step = max(1, len(per_package[package]) // 40)
                    chosen.append((package, queue.pop(0)))
                    skipped[package] += queue[:step - 1]
                    del queue[:step - 1]
        while len(chosen) < PER_LANGUAGE and any(skipped.values()):  # then the rest
            for package, queue in skipped.items():
                if queue and len(chosen) < PER_LANGUAGE:
                    chosen.append((package, queue.pop(0)))
        lines = [f"# {language}: {len(chosen)} validation files from "
                 f"{len({p for p, _ in chosen})} packages (tests/calibration/validation.py)"]
        lines += [f"{package} {entry}" for package, entry in chosen]
        (HERE / corpus.list_path(language).name).write_text("\n".join(lines) + "\n")
        print(lines[0])


# What a shebang's interpreter says, independent of the detector's own table.
_STATED_BY_INTERPRETER = {"sh": "Shell", "bash": "Shell", "dash": "Shell",
                          "python": "Python", "ruby": "Ruby", "node": "JavaScript",
                          "php": "PHP"}
_SHEBANG = re.compile(rb"#![ \t]*(\S+)(?:[ \t]+(?:-S[ \t]+)?(\S+))?")


def stated_language(package: str, path: str, head: bytes) -> str | None:
    """The language a file's extension (The Stack's label), its package or its
    interpreter states, without the detector; None where none does, and for a C
    header (`.h`: C or C++ by content, as in The Stack)."""
    from tests.calibration.stack_table import EXTENSIONS

    name = path.rsplit("/", 1)[-1]
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    if package == "fixture:bash-completion" and "/completions/" in path:
        return "Shell"  # whatever the name says (`btdownloadheadless.py`)
    if suffix == ".h" or (suffix == ".ts" and head.lstrip().startswith(b"<")):
        return None  # `.ts` also names Qt's XML translation files
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    if "/c++/" in path or "/boost/" in path:
        return "C++"  # libstdc++'s extensionless headers (<vector>)
    shebang = _SHEBANG.match(head)
    if shebang:  # `#!/bin/sh`, `#! /usr/bin/python3.11`, `#!/usr/bin/env -S bash -e`
        program = shebang.group(1).rsplit(b"/", 1)[-1]
        if program == b"env":
            program = (shebang.group(2) or b"").rsplit(b"/", 1)[-1]
        return _STATED_BY_INTERPRETER.get(re.sub(rb"[\d.]+$", b"", program).decode())
    return None


def detection_sample(per_language: int = PER_LANGUAGE) -> list[tuple[str, str, str]]:
    """(package, entry, stated language) for files of the validation half chosen
    without the detector: each file's language is what `stated_language` says, and
    up to `per_language` files per language are spread over the packages, one per
    package in turn. Extensionless files (scripts in /usr/bin, /etc, /usr/share,
    bash-completion's) are stated by their interpreter or package."""
    tuned = calibration_packages()
    by_language: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for package, entries in sorted(packages().items()):
        if not in_validation(package) or package in tuned:
            continue
        for entry in entries:
            path = expand(entry)
            if any(part in path for part in EXCLUDE):
                continue
            inner = path.split("!")[-1]
            head = b""
            name = inner.rsplit("/", 1)[-1]
            if ("." not in name or name.endswith(".ts")) and "!" not in path:
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                with open(path, "rb") as handle:
                    head = handle.read(256)
            language = stated_language(package, inner, head)
            if language in LANGUAGES:
                by_language[language][package].append(entry)
    chosen: list[tuple[str, str, str]] = []
    for language in LANGUAGES:
        queues = {p: _spread(e) for p, e in sorted(by_language[language].items())}
        taken = 0
        while taken < per_language and any(queues.values()):
            for package, queue in queues.items():
                while queue and taken < per_language:
                    entry = queue.pop(0)
                    if _readable_text(entry):
                        chosen.append((package, entry, language))
                        taken += 1
                        break
    return chosen


def _spread(entries: list[str]) -> list[str]:
    """`entries` reordered so that the first ones are spread over the whole list."""
    step = max(1, len(entries) // 40)
    return [entries[i] for i in sorted(range(len(entries)), key=lambda i: (i % step, i))]


def _readable_text(entry: str) -> bool:
    """Within the size bounds of the lists, not a link, and text."""
    path = expand(entry)
    try:
        if "!" not in path and (os.path.islink(path) or not corpus.MIN_BYTES
                                <= os.path.getsize(path) <= corpus.MAX_BYTES):
            return False
        data = read(entry)
    except OSError:
        return False
    return (corpus.MIN_BYTES <= len(data) <= corpus.MAX_BYTES
            and corpus._is_text(data[:4096]))


def package_of(entry: str) -> str:
    """The package a `fixture:path` entry belongs to, as `packages` splits them."""
    name, _, relative = entry.partition(":")
    if "!" in relative:
        archive, member = relative.split("!", 1)
        return f"java:{member.rsplit('/', 1)[0]}" if name in SPLIT else f"fixture:{name}"
    if name in SPLIT:
        return "go:" + relative.rsplit("/", 1)[0]
    parts = relative.split("/node_modules/")
    if len(parts) > 1:
        module = parts[-1].split("/")
        return "npm:" + "/".join(module[:2] if module[0].startswith("@") else module[:1])
    return "fixture:" + name


def calibration_packages() -> frozenset[str]:
    """Packages the calibration lists (tests/calibration/files) read, in any language:
    tuned on, so never validated on."""
    found = set()
    for language in corpus.LANGUAGES:
        found.update(package_of(entry) for entry in corpus.listed(language))
    return frozenset(found)


def listed(language: str) -> list[tuple[str, str]]:
    """(package, entry) of the validation list, minus packages calibration reads."""
    path = HERE / corpus.list_path(language).name
    rows = [line.split(" ", 1) for line in path.read_text().splitlines()
            if line and not line.startswith("#")]
    tuned = calibration_packages()
    return [(package, entry) for package, entry in rows if package not in tuned]


def label_copies(judge, copies: dict[str, bytes | None]) -> dict[str, bool | None]:
    """Per kind: True if the copy is broken (`judge`, the file's oracle, rejects it,
    or, without an oracle for this file, by construction), False if the oracle
    accepts it, None if the kind does not apply."""
    labels: dict[str, bool | None] = {}
    for kind, copy in copies.items():
        if copy is None:
            labels[kind] = None
        elif kind == "lose_php_open" or judge is None:
            labels[kind] = True  # by construction (php -l reads a tagless file as HTML)
        else:
            verdict = judge(copy)
            labels[kind] = None if verdict is None else not verdict
    return labels


def all_copies(language: str, entry: str, data: bytes, root) -> dict[str, bytes | None]:
    found = corpus.pairs_and_brackets(root)  # once for both modules' kinds
    return {**corpus.damaged(entry, data, root, found),
            **damage.damaged(language, entry, data, root, found[0])}


def labels_path(language: str) -> Path:
    return HERE / (corpus.list_path(language).stem + ".labels.json")


def write_labels(language: str) -> None:
    """Run the oracle on every original and damaged copy; store the labels (the test
    reads them instead of running the oracles)."""
    checker = syntax_check.Checker(language)
    out: dict[str, dict] = {}
    for _package, entry in listed(language):
        data = read(entry)
        tree = syntax_check.parse(checker.parser, syntax_check.prepare(language, data))
        copies = all_copies(language, entry, data, tree.root_node)
        judge = oracle.for_file(language, data, expand(entry).rsplit("/", 1)[-1])
        out[entry] = {"oracle": judge is not None, **label_copies(judge, copies)}
    labels_path(language).write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")


def measure(language: str, labels: dict[str, dict] | None = None,
            entries: list[str] | None = None) -> dict:
    """False rejection on originals and detection per kind on broken copies."""
    from lemur_data.stages.syntax import SyntaxParams

    params = SyntaxParams()
    checker = syntax_check.Checker(language)

    def rejected(data: bytes) -> bool:
        return syntax_check.rejects(checker.check_file(data), params.share_for(language),
                                    params.missing_for(language),
                                    params.unbalanced_for(language)) is not None

    if labels is None:
        labels = json.loads(labels_path(language).read_text())
    rows = [(p, e) for p, e in listed(language) if entries is None or e in entries]
    result: dict = {"files": len(rows), "packages": len({p for p, _ in rows}),
                    "rejected": [], **{k: [0, 0] for k in KINDS}}
    for _package, entry in rows:
        data = read(entry)
        if rejected(data):
            result["rejected"].append(entry)
            continue
        tree = syntax_check.parse(checker.parser, syntax_check.prepare(language, data))
        copies = all_copies(language, entry, data, tree.root_node)
        for kind, copy in copies.items():
            if copy is not None and labels.get(entry, {}).get(kind):
                result[kind][1] += 1
                result[kind][0] += rejected(copy)
    return result


def table_row(language: str, result: dict) -> str:
    false = 100.0 * len(result["rejected"]) / max(1, result["files"])
    cells = [f"{100.0 * c / n:.1f} ({n})" if n else "n/a"
             for c, n in (result[k] for k in KINDS)]
    return (f"| {language} | {result['files']} | {result['packages']} | {false:.1f} | "
            + " | ".join(cells) + " |")


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else "measure"
    languages = sys.argv[2:] or SYNTAX_LANGUAGES
    if command == "list":
        write_lists(languages)
    elif command == "label":
        for language in languages:
            write_labels(language)
            print(language, "labelled", flush=True)
    else:
        print("| language | files | packages | valid rejected % | "
              + " | ".join(f"{k} % (n)" for k in KINDS) + " |")
        print("|---|---:|---:|---:|" + "---:|" * len(KINDS))
        for language in languages:
            result = measure(language)
            print(table_row(language, result), flush=True)
            for entry in result["rejected"][:5]:
                print("   rejected:", entry, file=sys.stderr)


if __name__ == "__main__":
    main()
