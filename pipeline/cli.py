"""The `lemur-data` command line.

Exit codes: 0 success, 2 usage or manifest errors, 1 a run that failed, 130 a build
stopped by Ctrl-C (rerunning it resumes).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import shutil
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from . import heap
from .cli_args import parser
from .cli_commands import card_command, index_command, make_console, push_command
from .deferred_imports import defer
from .exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from rich.console import Console

    from .manifest import Manifest

# Nothing heavy is imported before `main` runs (rich, pydantic, the stages: seconds on a
# loaded machine), so a Ctrl-C at any time after the start gets a message, not a
# traceback of an interrupted import. The parser (cli_args.py), the other commands
# (cli_plan.py, cli_commands.py) and the exit codes import nothing heavy either.

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "default_run_dir",
           "exit_now", "main", "run"]


# What a shell reports for a command whose reader went away (128 + SIGPIPE), as for
# `git log | head`.
EXIT_BROKEN_PIPE = 141

# `run`, not a test's `main`: the process ends once the command is done
_ending = False


def run() -> NoReturn:
    """The `lemur-data` command (and `python -m lemur_data.pipeline.cli`): `main`, then
    `exit_now`. Tests call `main`, which returns.

    Output piped to a reader that stops early (`lemur-data inspect ... | head`) ends the
    command quietly, as Unix tools do, not with a BrokenPipeError traceback."""
    global _ending
    _ending = True  # Ray's connection may die with the process (executor.shutdown)
    defer()  # what Ray imports and no command uses, loaded on first use
    heap.hold()  # a build settles it once imported (pipeline/heap.py)
    try:
        code = _resident_build(sys.argv[1:])
        if code is None:
            code = main()
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    exit_now(code)


def _resident_build(argv: list[str]) -> int | None:
    """A build on a running cluster (`--ray-address`), handed to the cluster's resident
    driver (pipeline/resident): its exit code; None for every other command, and when
    no resident driver could take it."""
    if "build" not in argv:
        return None
    args = parser().parse_args(argv)  # a usage error exits here, as it would in main
    if args.command != "build" or not args.ray_address or args.no_resident:
        return None
    from .resident.client import build

    return build(argv, args.ray_address)


def exit_now(code: int) -> NoReturn:
    """End the process once a command is done, skipping the interpreter's teardown.

    Freeing the ~1,600 modules a build imports (Ray's and gRPC's C++ state, Arrow,
    matplotlib) took ~0.4 s after the last output, a tenth of a small build's fixed
    cost, and writes nothing: every file of the run is written and closed by then.
    What a normal exit does first is done here too: threads that are not daemons are
    joined, the atexit handlers run (Ray's shutdown, logging's flush), and stdout and
    stderr are flushed."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()  # what interpreter exit runs first (CPython's atexit module)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or broken pipe: nothing to keep
            stream.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Every command; Ctrl-C at any point, also while a command imports what it needs,
    exits 130 with a message (a build says how to resume)."""
    try:
        code = _main(argv)
    except KeyboardInterrupt:
        make_console(stderr=True, soft_wrap=True).print("interrupted", highlight=False)
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
    args = parser().parse_args(argv)
    if args.command == "build":
        # Ray starts (a local one: ~2 s, mostly its raylet waiting for its agents) or is
        # joined while this process imports (rich too), reads the manifest and plans.
        from .executor import abandon, start

        start(args.ray_address, args.workers)
        try:
            return _manifest_command(args, make_console(stderr=True, soft_wrap=True))
        finally:
            abandon()  # stopped if the build never got to use it (an error came first)
    console = make_console(stderr=True, soft_wrap=True)  # a message is one line, never wrapped
    if args.command == "card":
        return card_command(args.run_dir, console)
    if args.command in ("index", "push"):
        heap.settle()  # they read (and upload) a whole run: no reason to hold it
        return (index_command(args.run_dir, console) if args.command == "index"
                else push_command(args, console))
    if args.command in ("inspect", "explain", "diff"):
        from .workbench.cli import run

        heap.settle()  # imported; what it reads of a large run is the run's size
        return run(args, console)
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
        from .cli_plan import plan_command  # a build never needs it

        return plan_command(manifest, run_dir, args.cores_per_node)
    if args.command == "launch":
        from .launch.run import launch_command

        heap.settle()  # imported; it then waits on Megatron-LM for as long as it trains
        return launch_command(manifest, run_dir, args, console)
    return _build(manifest, run_dir, args, console)


def default_run_dir(manifest: Manifest) -> str:
    """runs/<name>, or runs/<name>-sample-<F|N>: a sample never lands in the full run's
    folder by default (and its fingerprint refuses it there anyway)."""
    if manifest.sample is None:
        return os.path.join("runs", manifest.name)
    return os.path.join("runs", f"{manifest.name}-sample-{manifest.sample}")


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
    print_summary(result.stats, run_dir, result.seconds, make_console(width=max(width, 100)))
    return EXIT_OK


def _stop_ray() -> None:
    from .executor import shutdown

    shutdown(ending=_ending)


if __name__ == "__main__":
    run()
