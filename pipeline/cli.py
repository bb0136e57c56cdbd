"""The `lemur-data` command line.

Exit codes: 0 success, 2 usage or manifest errors, 1 a run that failed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rich.console import Console

from lemur_data.pipeline.manifest import Manifest, ManifestError, load_manifest

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lemur-data",
        description="Curate a code-intensive pretraining corpus (The Stack + web text) into "
                    "Megatron-LM shards, on Ray. See README.md for the manifest reference.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_manifest(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--manifest", "-m", required=True, help="path to the manifest YAML")
        return sub

    build = with_manifest("build", "Run the manifest: ingest, filter, dedup, write shards. "
                                   "Rerunning the same command resumes a killed run.")
    build.add_argument("--run-dir", help="output folder, local or fsspec URL "
                                         "(default: runs/<manifest name>)")
    build.add_argument("--ray-address", help="join this Ray cluster ('auto' for the local "
                                             "one; default: RAY_ADDRESS, else start Ray here)")
    build.add_argument("--workers", type=int, help="most tasks at once (default: all CPUs)")
    build.add_argument("--progress", choices=["auto", "bar", "log", "none"], default="auto",
                       help="bars on a terminal, periodic log lines for cluster jobs")
    with_manifest("validate", "Check a manifest and print it resolved; runs nothing.")
    plan = with_manifest("plan", "List the sources, shards, steps and outputs of a build "
                                 "without running it.")
    plan.add_argument("--run-dir", help="as for build")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console(stderr=True)
    try:
        manifest = load_manifest(args.manifest)
    except ManifestError as error:
        console.print(f"[red]error:[/red] {error}", highlight=False, markup=True)
        return EXIT_USAGE
    if args.command == "validate":
        import yaml

        print(yaml.safe_dump(manifest.model_dump(mode="json", exclude_defaults=True),
                             sort_keys=False), end="")
        console.print(f"manifest {args.manifest} is valid", highlight=False)
        return EXIT_OK
    run_dir = args.run_dir or os.path.join("runs", manifest.name)
    if args.command == "plan":
        return _plan(manifest, run_dir)
    return _build(manifest, run_dir, args, console)


def _plan(manifest: Manifest, run_dir: str) -> int:
    from lemur_data.pipeline.planner import plan_run
    from lemur_data.stages.readers.common import ReaderError

    out = Console(soft_wrap=True)
    try:
        plan = plan_run(manifest, run_dir)
    except ReaderError as error:
        Console(stderr=True).print(f"error: {error}", highlight=False)
        return EXIT_FAILED
    out.print(f"manifest {manifest.name} (fingerprint {manifest.fingerprint()}), "
              f"run dir {run_dir}", highlight=False)
    out.print("sources:")
    for source in manifest.sources:
        units = plan.units[source.name]
        docs = sum(u.docs_hint for u in units)
        size = sum(u.bytes_hint for u in units)
        out.print(f"  {source.name:<24} {source.kind:<5} {source.reader.type:<14} "
                  f"{len(units):>6} shards  ~{docs:,} docs  ~{size / 1e6:,.1f} MB", highlight=False)
    out.print("steps:")
    for step in plan.steps:
        tasks = sum(len(p.tasks) for p in step.phases)
        phases = ", ".join(p.name for p in step.phases) if step.kind == "global" else "fused"
        where = step.out_dir or (step.global_ctx.work_dir if step.global_ctx else "")
        out.print(f"  {step.label:<40} {step.kind:<9} {tasks:>6} tasks ({phases}) -> {where}",
                  highlight=False)
    out.print(f"outputs: {len(plan.output_shards)} shards, stats {run_dir}/stats.json",
              highlight=False)
    return EXIT_OK


def _build(manifest: Manifest, run_dir: str, args: argparse.Namespace, console: Console) -> int:
    from lemur_data.pipeline.build import RunDirError, build
    from lemur_data.pipeline.executor import RunError
    from lemur_data.pipeline.stats import AccountingError
    from lemur_data.pipeline.summary import print_summary
    from lemur_data.stages.readers.common import ReaderError

    try:
        result = build(manifest, run_dir, args.ray_address, args.workers, args.progress, console)
    except RunDirError as error:
        console.print(f"error: {error}", highlight=False)
        return EXIT_USAGE
    except (ReaderError, RunError, AccountingError, OSError) as error:
        console.print(f"error: run failed: {error}", highlight=False)
        return EXIT_FAILED
    print_summary(result.stats, run_dir, result.seconds, Console())
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
