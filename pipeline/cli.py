"""The `lemur-data` command line.

Exit codes: 0 success, 2 usage or manifest errors, 1 a run that failed, 130 a build
stopped by Ctrl-C (rerunning it resumes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from .manifest import Manifest

# Nothing heavy is imported before `main` runs (rich, pydantic, the stages: seconds on a
# loaded machine), so a Ctrl-C at any time after the start gets a message, not a
# traceback of an interrupted import.

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C


def _console(*args: Any, **kwargs: Any) -> Console:
    """rich's Console, imported when first needed."""
    from rich.console import Console as RichConsole

    return RichConsole(*args, **kwargs)


def _positive_int(text: str) -> int:
    """argparse type: a count of at least 1 (0 or -2 workers would mean nothing, or a Ray
    traceback)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _sample(text: str) -> int | float:
    """argparse type: `--sample 0.1` (a fraction) or `--sample 500` (documents)."""
    from .sample import parse_sample

    try:
        return parse_sample(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


SAMPLE_HELP = ("a seeded sample for tuning, not for training: a fraction F (0 < F < 1) of "
               "each source, or N documents per source; overrides the manifest's `sample:` "
               "(default run folder: runs/<name>-sample-<F|N>)")


def _run_dir(text: str) -> str:
    """argparse type: a folder path; an empty one (`--run-dir ""`) would silently mean the
    default folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give a folder (or leave --run-dir out "
                                         "for runs/<manifest name>)")
    return text


def _port(text: str) -> int:
    """argparse type: a TCP port."""
    value = _whole(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a TCP port (1..65535)")
    return value


def _rank(text: str) -> int:
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be 0 or more")
    return value


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lemur-data",
        description="Curate a code-intensive pretraining corpus (The Stack + web text) into "
                    "Megatron-LM shards, on Ray. Manifest reference: docs/manifest.md.",
        epilog="Exit codes: 0 success; 2 usage or manifest error (also a run folder of "
               "another manifest, a folder that is not a finished run, a launch refused by "
               "a failed check); 1 a run, push or training that failed.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def with_manifest(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--manifest", "-m", required=True, help="path to the manifest YAML")
        return sub

    build = with_manifest("build", "Run the manifest: ingest, filter, dedup, tokenize and "
                                   "pack Megatron shards, then write stats, report and card. "
                                   "Rerunning the same command resumes a killed run.")
    build.add_argument("--run-dir", type=_run_dir, help="output folder, local or fsspec URL "
                                         "(default: runs/<manifest name>)")
    build.add_argument("--relist", action="store_true",
                       help="start the run over when its input listing changed since it "
                            "began (files added, removed or modified); without it such a "
                            "resume is refused, since it would mix both listings")
    build.add_argument("--ray-address", help="join this Ray cluster ('auto': the one "
                                             "`ray start` runs on this node; default: "
                                             "RAY_ADDRESS, else start a local Ray here)")
    build.add_argument("--workers", type=_positive_int,
                       help="most tasks at once (default: all CPUs of the Ray cluster)")
    build.add_argument("--progress", choices=["auto", "bar", "log", "none"], default="auto",
                       help="bar: progress bars; log: periodic log lines (cluster jobs); none: "
                            "quiet; auto (default): bars on a terminal, else log lines")
    build.add_argument("--sample", type=_sample, metavar="F|N", help=SAMPLE_HELP)
    with_manifest("validate", "Check a manifest and print it resolved; runs nothing.")
    plan = with_manifest("plan", "List the sources, shards, steps and outputs of a build "
                                 "without running it, and estimate core-hours, disk and "
                                 "memory per stage.")
    plan.add_argument("--run-dir", type=_run_dir, help="as for build")
    plan.add_argument("--sample", type=_sample, metavar="F|N", help="as for build")
    plan.add_argument("--cores-per-node", type=_positive_int, default=64,
                      help="cores of one cluster node, for the nodes-per-day estimate "
                           "(default: 64)")
    launch = with_manifest("launch", "Render, check and run the Megatron-LM training of a "
                                     "built run (writes <run-dir>/launch/train.sh).")
    launch.add_argument("--run-dir", type=_run_dir, help="as for build")
    launch.add_argument("--dry-run", action="store_true",
                        help="write and print train.sh and the check results; run nothing "
                             "(exit 0 even if a check fails)")
    launch.add_argument("--nnodes", type=_positive_int,
                        help="nodes (default: NNODES, SLURM_NNODES, else train.nnodes)")
    launch.add_argument("--node-rank", type=_rank, help="this node's rank (default: NODE_RANK, "
                                                      "SLURM_NODEID, else 0)")
    launch.add_argument("--master-addr", help="rank 0's host (default: MASTER_ADDR, the first "
                                              "host of SLURM_JOB_NODELIST, else localhost)")
    launch.add_argument("--master-port", type=_port, help="default: MASTER_PORT, else 29500")
    index_help = ("Write the dedup index of a finished run (<run>/index/: one section per "
                  "dedup stage, e.g. exact hashes, MinHash band buckets and shingle sets of "
                  "its kept documents and of the duplicates it removed in their favour), so "
                  "later builds can list the run under `against:` on those stages "
                  "(docs/incremental.md). A no-op where it exists; the run's work/ folder "
                  "must still be there.")
    index = commands.add_parser("index", help=index_help, description=index_help)
    index.add_argument("--run-dir", type=_run_dir, required=True,
                       help="the run folder of a finished build")
    card_help = ("Write the dataset card (README.md), report.html and plots/ of a finished "
                 "run from its stats.json.")
    card = commands.add_parser("card", help=card_help, description=card_help)
    card.add_argument("--run-dir", type=_run_dir, required=True,
                       help="the run folder of a finished build")
    push_help = ("Upload a finished run to a Hugging Face Hub dataset repo (token: HF_TOKEN "
                 "or `hf auth login`).")
    push = commands.add_parser("push", help=push_help, description=push_help)
    push.add_argument("--run-dir", type=_run_dir, required=True,
                       help="the run folder of a finished build")
    push.add_argument("--repo-id", required=True, help="ORG/NAME of the dataset repo")
    push.add_argument("--private", action="store_true", help="create the repo private")
    push.add_argument("--include", choices=["none", "parquet", "megatron"], default="parquet",
                      help="data to upload besides card, stats and report (default: parquet)")
    push.add_argument("--dry-run", action="store_true",
                      help="list the files and sizes that would be uploaded; upload nothing")
    push.add_argument("--progress", choices=["auto", "bar", "log", "none"], default="auto",
                      help="huggingface_hub's bars, or a log line per uploaded batch")
    from .workbench.cli import add_commands

    add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Every command; Ctrl-C at any point, also while a command imports what it needs,
    exits 130 with a message (a build says how to resume)."""
    try:
        code = _main(argv)
    except KeyboardInterrupt:
        _console(stderr=True, soft_wrap=True).print("interrupted", highlight=False)
        code = EXIT_INTERRUPTED
    if code == EXIT_INTERRUPTED:
        _forget_unhandled_interrupt()
    return code


def _forget_unhandled_interrupt() -> None:
    """Let a handled Ctrl-C exit 130, not die of SIGINT.

    CPython marks a KeyboardInterrupt "unhandled" whenever it leaves code that `exec`
    runs from a string (pythonrun.c `run_eval_code_obj`), even when a caller then handles
    it; dataclasses and namedtuple build their methods that way, so a Ctrl-C during an
    import often lands there. Under `python -m`, the interpreter checks the mark after
    finalizing and kills itself with SIGINT (Modules/main.c `Py_RunMain`, `exit_sigint`),
    whatever exit code we return: about 1 Ctrl-C in 6 died by -2 after printing
    `interrupted`. Each such evaluation first clears the mark, so one more clears it.
    """
    exec("pass")


def _main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = _console(stderr=True, soft_wrap=True)  # a message is one line, never wrapped
    if args.command == "card":
        return _card(args.run_dir, console)
    if args.command == "index":
        return _index(args.run_dir, console)
    if args.command == "push":
        return _push(args, console)
    if args.command in ("inspect", "explain", "diff"):
        from .workbench.cli import run

        return run(args, console)
    if args.command == "build":
        # Ray starts (a local one: ~2 s, mostly its raylet waiting for its agents) or is
        # joined while this process imports, reads the manifest and plans.
        from .executor import abandon, start

        start(args.ray_address, args.workers)
        try:
            return _manifest_command(args, console)
        finally:
            abandon()  # stopped if the build never got to use it (an error came first)
    return _manifest_command(args, console)


def _manifest_command(args: argparse.Namespace, console: Console) -> int:
    """validate, plan, launch and build: the commands that read a manifest."""
    # The manifest's schema imports every reader and the stage registry (~1 s): only the
    # commands that read a manifest pay for it.
    from .manifest import ManifestError, load_manifest

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
    if getattr(args, "sample", None) is not None:
        manifest = manifest.model_copy(update={"sample": args.sample})
    run_dir = args.run_dir or default_run_dir(manifest)
    if args.command == "plan":
        return _plan(manifest, run_dir, args.cores_per_node)
    if args.command == "launch":
        from .launch.run import launch_command

        return launch_command(manifest, run_dir, args, console)
    return _build(manifest, run_dir, args, console)


def default_run_dir(manifest: Manifest) -> str:
    """runs/<name>, or runs/<name>-sample-<F|N>: a sample never lands in the full run's
    folder by default (and its fingerprint refuses it there anyway)."""
    if manifest.sample is None:
        return os.path.join("runs", manifest.name)
    return os.path.join("runs", f"{manifest.name}-sample-{manifest.sample}")


def _plan(manifest: Manifest, run_dir: str, cores_per_node: int) -> int:
    from ..stages.ingest import plan_units
    from ..stages.readers.hf_dataset import LoadingScriptError
    from .estimate import estimate, nodes_for_a_day, read_fractions
    from .planner import plan_run

    out = _console(soft_wrap=True)
    out.print(f"manifest {manifest.name} (fingerprint {manifest.fingerprint()}), "
              f"run dir {run_dir}", highlight=False)
    out.print("sources:")
    units: dict[str, list] = {}
    by_kind = {"code": 0, "text": 0}
    by_source: dict[str, int] = {}
    for source in manifest.sources:
        try:
            units[source.name] = plan_units(source.reader, source.info(),
                                            manifest.shard.max_docs, int(manifest.shard.max_bytes))
        except LoadingScriptError as error:  # a manifest to change, not an offline guess
            _console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {error}",
                                                       highlight=False)
            return EXIT_USAGE
        except Exception as error:  # noqa: BLE001 - offline, no access: estimate from hints
            units[source.name] = []
            hint = int(source.size_hint or 0)
            by_kind[source.kind] += hint
            by_source[source.name] = hint
            reader = source.reader.type_name()
            out.print(f"  {source.name:<24} {source.kind:<5} {reader:<14} not listed "
                      f"({str(error).splitlines()[0][:80]}); size_hint {hint / 1e9:,.1f} GB",
                      highlight=False)
            continue
        docs = sum(u.docs_hint for u in units[source.name])
        size = sum(u.bytes_hint for u in units[source.name])
        by_kind[source.kind] += size
        by_source[source.name] = size
        out.print(f"  {source.name:<24} {source.kind:<5} {source.reader.type_name():<14} "
                  f"{len(units[source.name]):>6} shards  ~{docs:,} docs  ~{size / 1e6:,.1f} MB",
                  highlight=False)
    if manifest.sample is not None:
        units = _plan_sample(manifest, units, by_kind, by_source, out)
    from ..stages.dedup_index.format import IndexedRunError
    from .estimate import earlier_reads

    try:
        plan = plan_run(manifest, run_dir, units)
        earlier = earlier_reads(manifest)
    except IndexedRunError as error:
        _console(stderr=True).print(f"error: {error}", highlight=False)
        return EXIT_USAGE
    out.print("steps:")
    for step in plan.steps:
        tasks = sum(len(p.tasks) for p in step.phases)
        phases = ", ".join(p.name for p in step.phases) if step.kind == "global" else "fused"
        where = step.out_dir or (step.global_ctx.work_dir if step.global_ctx else "")
        out.print(f"  {step.label:<40} {step.kind:<9} {tasks:>6} tasks ({phases}) -> {where}",
                  highlight=False)
    out.print(f"outputs: {len(plan.output_shards)} shards, stats {run_dir}/stats.json",
              highlight=False)
    needed = manifest.mixture is not None and manifest.mixture.read == "needed"
    fractions = read_fractions(manifest, by_source)
    read_by_source = {s.name: int(by_source.get(s.name, 0) * fractions[s.name])
                      for s in manifest.sources}
    read_by_kind = {"code": 0, "text": 0}
    for source in manifest.sources:
        read_by_kind[source.kind] += read_by_source[source.name]
    if needed:
        out.print("read: needed, expected share of each source read (the build's pilot "
                  "measures the yield; this assumes estimate.KEPT_SHARE):")
        for source in manifest.sources:
            out.print(f"  {source.name:<24} {fractions[source.name]:>7.1%}  "
                      f"~{by_source.get(source.name, 0) * fractions[source.name] / 1e9:,.1f} GB",
                      highlight=False)
    if earlier:
        out.print("deduplicated against earlier runs (extra reads of their indexes):")
        for reads in earlier:
            out.print(f"  {reads.stage:<12} {reads.run}: {reads.docs:,} indexed docs, reads "
                      f"{reads.bytes_read / 1e6:,.2f} MB in full + at most "
                      f"{reads.bytes_candidates / 1e6:,.2f} MB for candidates only",
                      highlight=False)
    costs = estimate(manifest, read_by_source)
    charged = ("what read: needed is expected to read of" if needed else "all of") \
        + " the sources in its scope"
    out.print(f"estimate for {read_by_kind['code'] / 1e9:,.1f} GB of code and "
              f"{read_by_kind['text'] / 1e9:,.1f} GB of text (every stage charged for {charged}):")
    out.print(f"  {'stage':<16} {'input GB':>9} {'core-hours':>11} {'disk GB':>9} "
              f"{'memory/worker':>14}")
    for cost in costs:
        out.print(f"  {cost.stage:<16} {cost.input_bytes / 1e9:>9,.1f} {cost.core_hours:>11,.1f} "
                  f"{cost.disk_bytes / 1e9:>9,.1f} {cost.worker_memory_mb / 1e3:>11.1f} GB",
                  highlight=False)
    core_hours = sum(c.core_hours for c in costs)
    nodes = nodes_for_a_day(costs, cores_per_node)
    disk_tb = sum(c.disk_bytes for c in costs) / 1e12
    out.print(f"  total {core_hours:,.0f} core-hours, {disk_tb:,.2f} TB of disk: {nodes} node(s) "
              f"of {cores_per_node} cores finish it in a day", highlight=False)
    if needed:
        every = estimate(manifest, by_source)
        out.print(f"  with read: all ({by_kind['code'] / 1e9:,.1f} GB of code, "
                  f"{by_kind['text'] / 1e9:,.1f} GB of text): "
                  f"{sum(c.core_hours for c in every):,.0f} core-hours, "
                  f"{sum(c.disk_bytes for c in every) / 1e12:,.2f} TB of disk", highlight=False)
    return EXIT_OK


def _plan_sample(manifest: Manifest, units: dict[str, list], by_kind: dict[str, int],
                 by_source: dict[str, int], out: Console) -> dict[str, list]:
    """`plan` of a sampled run: what the sample reads of each source; the estimates that
    follow are for the sample (`by_kind`, `by_source` are updated in place)."""
    from .sample import SampledUnit, sample_units, scaled

    assert manifest.sample is not None
    sampled = sample_units(units, manifest.sample, manifest.seed)
    out.print(f"sample {manifest.sample} (seed {manifest.seed}; a sample: not for training), "
              "reads:", highlight=False)
    by_kind.update(code=0, text=0)
    for source in manifest.sources:
        taken = [u for u in sampled.get(source.name, []) if isinstance(u, SampledUnit)]
        docs = sum(scaled(u)[0] for u in taken)
        size = sum(scaled(u)[1] for u in taken)
        rows = (f"{taken[0].share:.1%} of their rows" if taken and taken[0].quota < 0
                else "the rows of lowest seeded hash")
        out.print(f"  {source.name:<24} {len(taken):>4} of {len(units.get(source.name, [])):>4} "
                  f"units, {rows}: ~{docs:,} docs  ~{size / 1e6:,.1f} MB", highlight=False)
        if units.get(source.name):
            by_source[source.name] = size
        by_kind[source.kind] += by_source.get(source.name, 0)
    return sampled


def _build(manifest: Manifest, run_dir: str, args: argparse.Namespace, console: Console) -> int:
    from ..stages.dedup_index.format import IndexedRunError
    from ..stages.readers.common import ReaderError
    from ..stages.storage import skip_pandas_probe
    from .build import RunDirError, build
    from .executor import RunError
    from .stats import AccountingError
    from .summary import print_summary

    # Ray's shutdown waits ~1.3 s for its processes to exit; once the last task is done it
    # runs in a thread while this one draws the report. Also sooner than Ray's atexit
    # hook, which first sleeps 0.5 s to let late worker logs through.
    stopping = threading.Thread(target=_stop_ray, name="ray-shutdown")
    skip_pandas_probe()  # the driver's tables, stats and report need no pandas (~0.3 s)
    try:
        result = build(manifest, run_dir, args.ray_address, args.workers, args.progress, console,
                       after_tasks=stopping.start, relist=args.relist)
    except (RunDirError, IndexedRunError) as error:
        # unwrapped: the paths it names stay whole, to copy and paste
        console.print(f"error: {error}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    except KeyboardInterrupt:
        console.print(f"interrupted: finished shards are kept in {run_dir}; rerun the same "
                      "command to resume", highlight=False)
        return EXIT_INTERRUPTED
    except (ReaderError, RunError, AccountingError, OSError) as error:
        console.print(f"error: run failed: {error}", highlight=False)
        return EXIT_FAILED
    finally:
        if stopping.is_alive():
            stopping.join()
    # Wide enough for the tables when stdout is a file or a CI log, not a terminal.
    width = shutil.get_terminal_size((140, 24)).columns
    print_summary(result.stats, run_dir, result.seconds, _console(width=max(width, 100)))
    return EXIT_OK


def _index(run_dir: str, console: Console) -> int:
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


def _stop_ray() -> None:
    from .executor import shutdown

    shutdown()


def _card(run_dir: str, console: Console) -> int:
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


def _push(args: argparse.Namespace, console: Console) -> int:
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


if __name__ == "__main__":
    sys.exit(main())
