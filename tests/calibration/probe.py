"""A probe on code no list holds: random packages, drawn fresh by seed, never tuned on.

    python -m tests.calibration.probe [--seed 20261201] [--into /tmp/lemur-probe]

The validation half (validation.py) is measured after every change, so it is tuned on
a little each time. A probe draws packages that no fixture of tests/fixtures/fetch.py
holds, at random by `--seed`, downloads them into `--into` (`apt-get download` +
`dpkg -x`/`-e`, `npm pack`; no root) and reports, without any oracle labels:

- the syntax stage's rejections of valid files, per language, each file's language
  as its extension (The Stack's label) or shebang states it;
- the code-language detector against those statements;
- the shell lexer against `bash -O extglob -n` on every shell script found.

A new seed is a new sample: use one that was never reported to measure honestly.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import re
import subprocess
import sys
from pathlib import Path

from lemur_data.filters.langid.code import detect_code_language
from lemur_data.filters.syntax import check as syntax_check
from lemur_data.stages.syntax import SyntaxParams
from tests.calibration import corpus, validation
from tests.fixtures.fetch import DEBIAN, NPM, ORACLE_DEBIAN, Apt, cache_dir, unpack_deb

# Debian package groups (how many to draw from each): source-shipping kinds, and
# packages of the sections where shell scripts live.
GROUPS = {
    "crates": (r"librust-[a-z][a-z0-9-]*-dev", 50),
    "php": (r"php-[a-z0-9-]+", 35),
    "ruby": (r"ruby-[a-z0-9-]+", 35),
    "go": (r"golang-github-[a-z0-9-]+-dev", 30),
    "node": (r"node-[a-z0-9-]+", 60),
    "python": (r"python3-[a-z0-9-]+", 40),
    "c-headers": (r"lib[a-z0-9.+-]+-dev", 60),
    "scripts": (None, 150),  # sections admin, utils, net, misc, devel
}
MAX_DEB_BYTES = 4_000_000
# Popular npm packages (JavaScript and TypeScript); a seed draws `--npm` of those no
# fixture is.
NPM_POOL = [
    "vue@3.5.13", "svelte@5.1.0", "rollup@4.24.0", "webpack@5.95.0", "eslint@9.12.0",
    "prettier@3.3.3", "@angular/core@18.2.8", "three@0.169.0", "chart.js@4.4.4",
    "lodash-es@4.17.21", "underscore@1.13.7", "bluebird@3.7.2", "express@4.21.1",
    "koa@2.15.3", "fastify@5.0.0", "react-dom@18.3.1", "react-router@6.27.0",
    "zx@8.1.9", "execa@9.4.0", "undici@6.20.1", "@babel/parser@7.25.8",
    "@babel/traverse@7.25.7", "acorn@8.13.0", "postcss@8.4.47", "less@4.2.0",
    "marked@14.1.3", "markdown-it@14.1.0", "highlight.js@11.10.0", "dompurify@3.1.7",
    "typeorm@0.3.20", "mongoose@8.7.2", "drizzle-orm@0.35.1", "kysely@0.27.4",
    "inversify@6.0.2", "@nestjs/core@10.4.4", "ramda@0.30.1", "socket.io@4.8.0",
    "d3@7.9.0", "graphql@16.9.0", "pinia@2.2.4",
]
PER_PACKAGE = 60  # files a package contributes at most


def _available(apt: Apt) -> list[tuple[str, str, int]]:
    """(package, section, .deb size) of every package in the apt lists."""
    text = subprocess.run(["apt-cache", *apt.options, "dumpavail"], capture_output=True,
                          text=True, check=True).stdout
    out = []
    for stanza in text.split("\n\n"):
        fields = dict(re.findall(r"^(Package|Section|Size): (.*)$", stanza, re.M))
        if "Package" in fields:
            out.append((fields["Package"], fields.get("Section", ""),
                        int(fields.get("Size", 0))))
    return sorted(set(out))


def draw(apt: Apt, seed: int) -> list[str]:
    """Random packages per group, none a fixture, each under MAX_DEB_BYTES."""
    taken = set(DEBIAN) | set(ORACLE_DEBIAN)
    rng = random.Random(seed)
    packages = [(p, s, n) for p, s, n in _available(apt)
                if p not in taken and n < MAX_DEB_BYTES and not p.endswith(("-doc", "-dbg"))]
    chosen: list[str] = []
    for pattern, count in GROUPS.values():
        pool = sorted({p for p, section, _ in packages if (
            re.fullmatch(pattern, p) and not re.search(r"-\d", p) if pattern
            else section in ("admin", "utils", "net", "misc", "devel"))} - set(chosen))
        chosen += rng.sample(pool, min(count, len(pool)))
    return chosen


def fetch(into: Path, seed: int, npm: int) -> Path:
    root = into / "packages"
    if root.is_dir():
        return root  # fetched before (same seed and folder)
    work = into / "debs"
    work.mkdir(parents=True, exist_ok=True)
    apt = Apt(cache_dir())
    debs = apt.download(draw(apt, seed), work)
    for name, deb in sorted(debs.items()):
        (work / "unpacked" / name).mkdir(parents=True)
        unpack_deb(deb, work / "unpacked" / name)
    pool = [spec for spec in NPM_POOL if spec.rsplit("@", 1)[0] not in NPM]
    specs = random.Random(seed).sample(pool, min(npm, len(pool)))
    (work / "npm").mkdir(exist_ok=True)
    subprocess.run(["npm", "pack", "--silent", *specs], cwd=work / "npm", check=True,
                   capture_output=True)
    for archive in sorted((work / "npm").glob("*.tgz")):
        folder = work / "unpacked" / f"npm-{archive.stem}"
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "xzf", str(archive), "-C", str(folder)], check=True)
    (work / "unpacked").rename(root)
    return root


def files_by_language(root: Path, seed: int) -> dict[str, list[tuple[str, Path]]]:
    """Per stated language, (package, file): at most PER_PACKAGE files a package."""
    rng = random.Random(seed)
    out: dict[str, list[tuple[str, Path]]] = collections.defaultdict(list)
    for package in sorted(os.listdir(root)):
        found = []
        for folder, _, names in os.walk(root / package):
            if any(part in folder for part in validation.EXCLUDE):
                continue
            for name in sorted(names):
                path = Path(folder) / name
                if path.is_symlink() or not path.is_file():
                    continue
                if not corpus.MIN_BYTES <= path.stat().st_size <= corpus.MAX_BYTES:
                    continue
                head = b""
                if "." not in name or name.endswith(".ts"):
                    head = path.read_bytes()[:256]
                stated = validation.stated_language(f"fixture:{package}", str(path), head)
                if stated in validation.LANGUAGES:
                    found.append((stated, path))
        rng.shuffle(found)
        for stated, path in found[:PER_PACKAGE]:
            out[stated].append((package, path))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--into", type=Path, default=Path("/tmp/lemur-probe"))
    parser.add_argument("--npm", type=int, default=40, help="npm packages to draw")
    args = parser.parse_args()
    root = fetch(args.into / str(args.seed), args.seed, args.npm)
    params = SyntaxParams()
    print(f"| language | files | packages | valid rejected | detected right | "
          f"shell: agrees with bash -n |  (seed {args.seed}, {root})")
    print("|---|---:|---:|---:|---:|---:|")
    for language, rows in sorted(files_by_language(root, args.seed).items()):
        checker = syntax_check.Checker(language)
        rejected, right, agree, files = [], 0, 0, 0
        for _package, path in rows:
            data = path.read_bytes()
            if b"\0" in data[:4096] or not corpus._is_text(data[:4096]):
                continue
            files += 1
            right += detect_code_language(str(path), data) == language
            verdict = syntax_check.rejects(
                checker.check_file(data), params.share_for(language),
                params.missing_for(language), params.unbalanced_for(language))
            if verdict:
                rejected.append((verdict, path))
            if language == "Shell":
                bash = subprocess.run(["bash", "-O", "extglob", "-n", str(path)],
                                      capture_output=True).returncode == 0
                agree += bash == (verdict is None)
        shell = f"{agree} of {files}" if language == "Shell" else ""
        print(f"| {language} | {files} | {len({p for p, _ in rows})} | {len(rejected)} | "
              f"{right} | {shell} |", flush=True)
        for verdict, path in rejected[:10]:
            print(f"    {verdict}: {path.relative_to(root)}", file=sys.stderr)


if __name__ == "__main__":
    main()
