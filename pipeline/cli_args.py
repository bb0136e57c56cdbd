"""The `lemur-data` command's arguments: the parser, and the types that refuse a bad
value with a usage error (exit 2) before any command runs."""

from __future__ import annotations

import argparse


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


def parser() -> argparse.ArgumentParser:
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
                                             "RAY_ADDRESS, else start a local Ray here). "
                                             "The build is run by a resident driver kept "
                                             "for the cluster, whose workers stay warm "
                                             "between builds (the first build starts it; "
                                             "it exits after 10 idle minutes): the way to "
                                             "iterate, see docs/cluster.md")
    build.add_argument("--no-resident", action="store_true",
                       help="with --ray-address: run the build in this process, not in the "
                            "cluster's resident driver")
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
