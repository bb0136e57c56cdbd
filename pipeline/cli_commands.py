"""The commands that need a finished run folder (`index`, `card`, `push`), and the
console every command prints to.

Each imports what it needs when it runs: the CLI's start stays light (see cli.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

from .exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE


def make_console(*args: Any, **kwargs: Any) -> Console:
    """rich's Console, imported when first needed."""
    from rich.console import Console as RichConsole

    return RichConsole(*args, **kwargs)


def index_command(run_dir: str, console: Console) -> int:
    from ..stages.dedup_index.format import IndexFiles, index_sections
    from .dedup_index import NotIndexableError, build_index

    try:
        index = build_index(run_dir)
    except NotIndexableError as error:
        console.print(f"error: {error}", highlight=False)
        return EXIT_USAGE
    sections = [f"{name}: {section['docs']:,} documents"
                for name, section in index_sections(index).items()]
    print(IndexFiles(run_dir).manifest())
    console.print(f"index of {index['kept_docs']:,} kept documents ({'; '.join(sections)})",
                  highlight=False)
    return EXIT_OK


def card_command(run_dir: str, console: Console) -> int:
    from ..stages import storage
    from .publish.run_docs import write_run_docs

    storage.skip_pandas_probe()
    if not storage.exists(storage.join(run_dir, "stats.json")):
        console.print(f"error: {run_dir} holds no stats.json: not a finished run",
                      highlight=False)
        return EXIT_USAGE
    try:
        written = write_run_docs(run_dir)
    except (OSError, KeyError, ValueError) as error:
        console.print(f"error: writing the card failed: {error!r}", highlight=False)
        return EXIT_FAILED
    for path in written:
        print(path)
    return EXIT_OK


def push_command(args: argparse.Namespace, console: Console) -> int:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    from .publish.hub import (
        NotARunError,
        PushError,
        card_for,
        describe,
        plan_files,
        push,
    )

    try:  # huggingface_hub's own rule, before any work (also for --dry-run)
        validate_repo_id(args.repo_id)
    except HFValidationError as error:
        console.print(f"error: --repo-id: {error}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    try:
        if args.dry_run:
            files = plan_files(args.run_dir, args.include, card_for(args.run_dir, args.include))
            print("\n".join(describe(files)))
            console.print(f"dry run: nothing uploaded to {args.repo_id}", highlight=False)
            return EXIT_OK
        result = push(args.run_dir, args.repo_id, private=args.private, include=args.include,
                      progress=args.progress, console=console)
    except NotARunError as error:
        console.print(f"error: {error}", highlight=False)
        return EXIT_USAGE
    except PushError as error:
        console.print(f"error: {error}", highlight=False)
        return EXIT_FAILED
    except Exception as error:  # network and Hub errors: their classes vary by client version
        console.print(f"error: push to {args.repo_id} failed: {type(error).__name__}: {error}",
                      highlight=False)
        return EXIT_FAILED
    console.print(f"pushed {len(result['files'])} files ({result['bytes'] / 1e6:,.1f} MB) to "
                  f"{result['url']} in {result['seconds']:.0f} s", highlight=False)
    return EXIT_OK
