"""`lemur-data launch`: render, check and run the Megatron-LM training of a finished run.

A build whose manifest has `train:` ends by writing `<run>/launch/train.sh` (one node,
the manifest's layout, nothing taken from the build machine's environment, so reruns
write the same bytes). `lemur-data launch` renders it again with the node layout of
where it runs (arguments, torchrun variables, Slurm variables), runs the checks and,
unless `--dry-run`, runs the script.
"""

from __future__ import annotations

import argparse
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from rich.console import Console

from ...stages import storage
from ...stages.tokenize.tokenizer import TokenizerConfig
from ..exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from ..manifest import Manifest
from .checks import Check, failed, run_checks
from .nodes import Distributed, resolve_distributed
from .plan import LaunchPlan, RunPaths, render
from .tokenizer_files import (
    expected_tokenizer_kind,
    stage_tokenizer,
    tokenizer_files,
)


class LaunchError(Exception):
    """The manifest or run cannot give a training command."""


@dataclass(frozen=True)
class Prepared:
    plan: LaunchPlan
    tokenizer_error: str | None = None


def token_budget(manifest: Manifest, run_dir: str) -> float:
    """The mixture's total_tokens (a sample's share of it: pipeline/sample.for_sample);
    without a mixture, the tokens the pack stage wrote."""
    if manifest.mixture is not None:
        stats = storage.join(run_dir, "stats.json")
        if manifest.sample is not None and storage.exists(stats):
            scaled = (storage.read_json(stats).get("sample") or {}).get("mixture_total_tokens")
            if scaled:
                return float(scaled)
        return manifest.mixture.total_tokens
    summary = storage.join(run_dir, "megatron", "summary.json")
    if storage.exists(summary):
        return float(storage.read_json(summary)["tokens"])
    raise LaunchError(f"no token budget: the manifest has no mixture.total_tokens and "
                      f"{summary} does not exist (run `lemur-data build` first)")


def prepare(manifest: Manifest, run_dir: str, distributed: Distributed | None = None,
            ) -> Prepared:
    """Copy the tokenizer next to the script, render, write `launch/train.sh`."""
    if manifest.train is None:
        raise LaunchError("the manifest has no `train:` section (see docs/megatron.md)")
    paths = RunPaths.of(run_dir, manifest.train)
    config = TokenizerConfig.model_validate((manifest.tokenizer or TokenizerConfig())
                                            .model_dump())
    error = None
    try:
        files = stage_tokenizer(config, paths.launch_dir)
    except Exception as failure:  # Hub, fsspec and package errors alike: report, still render
        error = f"cannot copy the run's tokenizer ({config.describe()}): {failure}"
        files = tokenizer_files(paths.launch_dir, expected_tokenizer_kind(config))
    plan = render(manifest.train, paths.run_dir, token_budget(manifest, run_dir), files,
                  distributed)
    storage.write_bytes_atomic(paths.script, plan.script().encode())
    if "://" not in paths.script:
        os.chmod(paths.script, 0o755)
    storage.write_json_atomic(storage.join(paths.launch_dir, "launch.json"), {
        "preset": manifest.train.preset, "total_tokens": plan.total_tokens,
        "train_iters": plan.iters, "argv": plan.argv(), "removed_flags": list(plan.removed)})
    return Prepared(plan, error)


def write_launch(manifest: Manifest, run_dir: str) -> str:
    """The end of a build: `launch/train.sh` for the manifest's own layout."""
    return prepare(manifest, run_dir).plan.paths.script


def checks_for(prepared: Prepared, env: Mapping[str, str] | None = None) -> list[Check]:
    checks = run_checks(prepared.plan, env)
    if prepared.tokenizer_error:
        checks = [Check("tokenizer", "fail", prepared.tokenizer_error)
                  if c.name == "tokenizer" else c for c in checks]
    return checks


def launch_command(manifest: Manifest, run_dir: str, args: argparse.Namespace,
                   console: Console) -> int:
    def say(text: str) -> None:  # whole lines: messages are grepped in logs
        console.print(text, highlight=False, markup=False, soft_wrap=True)

    if manifest.train is None:
        say("error: the manifest has no `train:` section; nothing to launch")
        return EXIT_USAGE
    try:
        distributed = resolve_distributed(manifest.train, os.environ, args.nnodes,
                                          args.node_rank, args.master_addr, args.master_port)
        prepared = prepare(manifest, run_dir, distributed)
    except (ValueError, LaunchError) as error:
        say(f"error: {error}")
        return EXIT_USAGE
    plan = prepared.plan
    if args.dry_run:
        print(plan.script(), end="")
    d = distributed
    origins = ", ".join(f"{k} from {v}" for k, v in d.sources.items())
    say(f"wrote {plan.paths.script}: {plan.iters} iterations; node {d.node_rank} of "
        f"{d.nnodes}, master {d.master_addr}:{d.master_port} ({origins})")
    checks = checks_for(prepared)
    for check in checks:
        say(check.line())
    bad = failed(checks)
    if args.dry_run:
        say("dry run: not launched" + (f" ({len(bad)} check(s) would refuse it)"
                                       if bad else ""))
        return EXIT_OK
    if bad:
        names = ", ".join(c.name for c in bad)
        say(f"refusing to launch: {len(bad)} check(s) failed ({names})")
        return EXIT_USAGE
    env = {**os.environ, "NNODES": str(d.nnodes), "NODE_RANK": str(d.node_rank),
           "MASTER_ADDR": d.master_addr, "MASTER_PORT": str(d.master_port)}
    done = subprocess.run(["bash", plan.paths.script], env=env, cwd=env["MEGATRON_LM"])
    if done.returncode:
        say(f"error: training exited with {done.returncode}")
        return EXIT_FAILED
    return EXIT_OK
