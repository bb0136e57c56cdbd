"""The command line's garbage collector: off while a command imports, and what it
imported frozen out of every later collection.

A build's driver imports ~1,600 modules (Ray, pyarrow, pydantic, the stages,
matplotlib), ~150,000 objects the collector tracks and none of them garbage. Python
walked them all in each full collection: three in a small build, 0.4-0.5 s of its
fixed cost at load ~6, one of them in the middle of drawing the report. `gc.freeze`
moves the objects that exist into a generation no collection visits (CPython's
documented use: a process that imports, then works), so later collections see only
what the build itself makes.

Only the `lemur-data` command does this (`cli.run` calls `hold`); tests that call
`cli.main` keep their collector as it is. A build settles once its imports are done
and again before its report; `index`, `push`, `launch` and the workbench commands
(`inspect`, `explain`, `diff`) once theirs are, since what they then read or wait for
grows with the run. `validate`, `plan` and `card` are short and run with the
collector off to their end.
"""

from __future__ import annotations

import gc

_held = False


def hold() -> None:
    """No collection until `settle`: the command is about to import."""
    global _held
    _held = True
    gc.disable()


def settle() -> None:
    """What exists now is long-lived: out of later collections, which run again."""
    if _held:
        gc.freeze()
        gc.enable()


def release() -> None:
    """No more freezing: a resident driver (pipeline/resident) settles once, after its
    imports; what its builds leave behind must stay collectable."""
    global _held
    _held = False
