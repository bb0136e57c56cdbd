"""Regenerate pipeline/launch/megatron_flags.txt from Megatron-LM checkouts (by hand).

    python -m tests.tools.megatron_flags ~/Megatron-LM-core_v0.16.1 ~/Megatron-LM-main \
        > pipeline/launch/megatron_flags.txt

Loads each checkout's own argparse parser (megatron.training.arguments), which imports
torch and triton: run it where those are installed. Keeps the flags every checkout
accepts with the same kind (switch or value).
"""

from __future__ import annotations

import subprocess
import sys

from lemur_data.pipeline.launch.checks import checkout_flags


def describe(root: str) -> str:
    commit = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown commit"
    return f"{root} ({commit})"


def main(roots: list[str]) -> None:
    common: set[tuple[str, str]] | None = None
    for root in roots:
        flags = set(checkout_flags(root).items())
        common = flags if common is None else common & flags
    print("# Command-line flags Megatron-LM's pretrain_gpt.py accepts: the flags of its argparse "
          "parser")
    print("# (megatron.training.arguments.add_megatron_arguments) in ALL of: "
          + ", ".join(describe(r) for r in roots))
    print("# Format: flag, then `switch` (takes no value) or `value`.")
    print("# Regenerate (in an env with torch + triton): python -m tests.tools.megatron_flags "
          "CHECKOUT... > pipeline/launch/megatron_flags.txt")
    for flag, kind in sorted(common or ()):
        print(f"{flag} {kind}")


if __name__ == "__main__":
    main(sys.argv[1:])
