"""Measure the syntax check on the listed real files and their damaged copies.

    python -m tests.calibration.measure [--limit N] [--out results.jsonl] [--table]

For each file: the report on the original, and on each damaged copy (cut
mid-file, 10% of lines deleted, one bracket token removed). `--table` prints
false rejections and detection per language at the stage's default thresholds.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass

from lemur_data.filters.syntax import check as syntax_check
from tests.calibration.corpus import DAMAGES, LANGUAGES, damaged, listed, read
from tests.calibration.oracle import for_file


@dataclass(frozen=True)
class Measured:
    language: str
    entry: str
    original: syntax_check.SyntaxReport
    damaged: dict[str, syntax_check.SyntaxReport | None]


def measure(language: str, entries: list[str], fetched_oracles: bool = True
            ) -> list[Measured]:
    """Reports on each file and its damaged copies. A copy its language's oracle
    accepts counts neither way; `fetched_oracles` false uses only the oracles every
    test machine has (oracle.SYSTEM), so the others' copies count by construction."""
    checker = syntax_check.Checker(language)
    out: list[Measured] = []
    for entry in entries:
        raw = read(entry)
        data = syntax_check.prepare(language, raw)
        tree = syntax_check.parse(checker.parser, data)
        original = checker.check_file(raw)
        copies = damaged(entry, raw, tree.root_node)
        # A copy the language's own parser accepts is not broken (bash reads
        # `$!indirect}` fine): it counts neither way.
        judge = for_file(language, raw, entry.rsplit("/", 1)[-1], fetched=fetched_oracles)
        if judge is not None:
            copies = {kind: None if copy is None or judge(copy) else copy
                      for kind, copy in copies.items()}
        out.append(Measured(language, entry, original, {
            kind: None if copy is None
            else checker.check_file(copy)
            for kind, copy in copies.items()}))
    return out


def rates(rows: list[Measured], max_error_share: float, max_missing: int,
          max_unbalanced: int = 0) -> dict[str, float | int]:
    """False rejection % on originals; detection % per damage on passing originals."""
    def rejected(report: syntax_check.SyntaxReport) -> bool:
        return syntax_check.rejects(report, max_error_share, max_missing,
                                    max_unbalanced) is not None

    passing = [row for row in rows if not rejected(row.original)]
    result: dict[str, float | int] = {
        "files": len(rows),
        "false_rejection": 100.0 * (len(rows) - len(passing)) / max(1, len(rows)),
    }
    for kind in DAMAGES:
        copies = [row.damaged[kind] for row in passing if row.damaged[kind] is not None]
        result[f"{kind}_n"] = len(copies)
        result[kind] = 100.0 * sum(rejected(c) for c in copies) / max(1, len(copies))
    return result


def main() -> None:
    from lemur_data.stages.syntax import SyntaxParams

    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--languages", nargs="*", default=LANGUAGES)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    params = SyntaxParams()
    sink = open(args.out, "w") if args.out else None  # noqa: SIM115
    print("| language | files | false rejection % | detection % cut | "
          "detection % 10% lines deleted | detection % bracket removed |")
    print("|---|---:|---:|---:|---:|---:|")
    for language in args.languages:
        entries = listed(language)
        rows = measure(language, entries[: args.limit] if args.limit else entries)
        if sink:
            for row in rows:
                sink.write(json.dumps({"language": language, "entry": row.entry,
                                       "original": asdict(row.original),
                                       **{k: asdict(v) if v else None
                                          for k, v in row.damaged.items()}}) + "\n")
        r = rates(rows, params.share_for(language), params.missing_for(language),
                  params.unbalanced_for(language))
        # A damage that never applies (HTML has no bracket tokens) shows as n/a, not 0.
        shown = [f"{r[kind]:.1f}" if r[f"{kind}_n"] else "n/a" for kind in DAMAGES]
        print(f"| {language} | {r['files']} | {r['false_rejection']:.1f} | "
              + " | ".join(shown) + " |", flush=True)
    if sink:
        sink.close()


if __name__ == "__main__":
    main()
