"""The workbench's commands: `inspect`, `explain` and `diff` (argparse and output)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..exit_codes import EXIT_OK, EXIT_USAGE

GROUP_KEYS = ("reason", "stage", "source", "lang", "outcome")
OUTCOMES = ("removed", "kept", "replaced", "all")

INSPECT_HELP = ("Print examples of what a finished run removed or kept, per group (by "
                "default per reason): id, path, reason, detail, first lines, and where the "
                "rule acted, marked. Examples are chosen by a seeded hash of their ids.")
EXPLAIN_HELP = ("Show every stage's decision on one document of a finished run, in order: "
                "language and score, quality metrics against thresholds, syntax error share, "
                "duplicate cluster and its surviving copy, benchmark match, PII redacted, "
                "repository document, Megatron shard, or the stage that removed it.")
DIFF_HELP = ("Compare two finished runs of the same input: the documents whose fate "
             "differs (per stage and reason in each run), removals per reason, kept "
             "documents and tokens per source, language and mixture component, examples.")


def add_commands(commands: Any) -> None:
    """The three subcommands, on the `lemur-data` parser's subparsers (imports nothing
    else: every command builds this parser)."""
    inspect = commands.add_parser("inspect", help=INSPECT_HELP, description=INSPECT_HELP)
    inspect.add_argument("--run-dir", required=True, help="the run folder of a finished build")
    inspect.add_argument("--by", default="reason",
                         help=f"group by these, comma-separated: {', '.join(GROUP_KEYS)} "
                              "(default: reason)")
    inspect.add_argument("--outcome", choices=OUTCOMES, default="removed",
                         help="removed (default), kept, replaced (joined into a document a "
                              "stage made) or all")
    inspect.add_argument("--stage", help="only documents this stage removed")
    inspect.add_argument("--reason", help="only this reason (`quality:max_line_length`, or "
                                          "the rule alone)")
    inspect.add_argument("--source", help="only this source")
    inspect.add_argument("--lang", help="only this language")
    inspect.add_argument("-n", type=int, default=3, help="examples per group (default: 3)")
    inspect.add_argument("--seed", type=int, help="choose other examples (default: the run's "
                                                  "seed)")
    inspect.add_argument("--lines", type=int, default=6, help="first lines shown (default: 6)")
    inspect.add_argument("--format", choices=["text", "jsonl"], default="text",
                         help="jsonl: one JSON object per example, with its group")

    explain = commands.add_parser("explain", help=EXPLAIN_HELP, description=EXPLAIN_HELP)
    explain.add_argument("--run-dir", required=True, help="the run folder of a finished build")
    explain.add_argument("document", metavar="ID|PATH",
                         help="a document id, or its path as its source lists it")
    explain.add_argument("--format", choices=["text", "json"], default="text")

    diff = commands.add_parser("diff", help=DIFF_HELP, description=DIFF_HELP)
    diff.add_argument("run_a", metavar="RUN_A", help="a finished run folder")
    diff.add_argument("run_b", metavar="RUN_B", help="another run of the same input")
    diff.add_argument("-n", type=int, default=2, help="examples per change of fate (default: 2)")
    diff.add_argument("--format", choices=["text", "json"], default="text")


def run(args: argparse.Namespace, console: Any) -> int:
    from ...stages.storage import skip_pandas_probe
    from .rundir import NotARunError

    skip_pandas_probe()  # pyarrow would import pandas to build its first array (~0.6 s)

    try:
        if args.command == "inspect":
            return _inspect(args)
        if args.command == "explain":
            return _explain(args, console)
        return _diff(args, console)
    except NotARunError as error:
        console.print(f"error: {error}", highlight=False)
        return EXIT_USAGE


def _inspect(args: argparse.Namespace) -> int:
    from .inspect import Selection, inspect
    from .rundir import RunFolder
    from .show import as_json, as_text

    by = [k.strip() for k in args.by.split(",") if k.strip()]
    unknown = [k for k in by if k not in GROUP_KEYS]
    if unknown:
        print(f"error: --by {','.join(unknown)}: group by {', '.join(GROUP_KEYS)}",
              file=sys.stderr)
        return EXIT_USAGE
    selection = Selection(by=by, outcome=args.outcome, stage=args.stage, reason=args.reason,
                          source=args.source, lang=args.lang, per_group=max(args.n, 0),
                          seed=args.seed, lines=args.lines)
    run = RunFolder(args.run_dir)
    groups = 0
    for key, count, items in inspect(run, selection):
        groups += 1
        if args.format == "jsonl":
            for item in items:
                print(as_json({"group": dict(zip(by, key, strict=True)),
                               "group_docs": count, **item}))
            continue
        print(f"{' / '.join(key)}: {count:,} documents, {len(items)} shown")
        for item in items:
            print(as_text(item))
        print()
    if groups == 0 and args.format == "text":
        print("no documents match")
    return EXIT_OK


def _explain(args: argparse.Namespace, console: Any) -> int:
    from .explain import UnknownDocumentError, explain
    from .rundir import RunFolder

    run = RunFolder(args.run_dir)
    try:
        found = explain(run, args.document)
    except UnknownDocumentError as error:
        console.print(f"error: {error}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    for i, item in enumerate(found):
        if args.format == "json":
            print(json.dumps(item.json(), ensure_ascii=False, sort_keys=True))
        else:
            print(("\n" if i else "") + item.text())
    return EXIT_OK


def _diff(args: argparse.Namespace, console: Any) -> int:
    from .diff import InputMismatchError, as_text, diff
    from .rundir import RunFolder

    a, b = RunFolder(args.run_a), RunFolder(args.run_b)
    try:
        result = diff(a, b, per_group=max(args.n, 0))
    except InputMismatchError as error:
        console.print(f"error: {error}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    if args.format == "json":
        print(json.dumps(result.json(), ensure_ascii=False, sort_keys=True))
    else:
        print(as_text(result, a, b))
    return EXIT_OK
