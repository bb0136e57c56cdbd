"""CPU time of the decontaminate stage (setup + matching) on the bench corpus: before/after.

Run by hand (not collected by pytest), once per code tree, interleaved:
    git archive <old-commit> | tar -x -C /tmp/base/lemur_data
    PYTHONPATH=/tmp/base python -m tests.bench.bench_decontam_stage all 3   # old code
    python -m tests.bench.bench_decontam_stage all 3                        # this tree
`he` sets up HumanEval only (as `run.py --extra` does), `all` the four benchmarks
(MBPP and GSM8K from --mbpp/--gsm8k files, by default the samples in tests/data).
The corpus is bench_decontam_pii.py's: every N-th file of the stdlib and
site-packages, and the pydoc topics; nothing is planted.
"""

from __future__ import annotations

import argparse
import json
import sysconfig
import time
from pathlib import Path

import lemur_data.filters.decontaminate as matcher_module
from lemur_data.stages.decontaminate.stage import Decontaminate, DecontaminateParams

DATA = Path(__file__).resolve().parents[1] / "data" / "benchmarks"
SUFFIXES = {".py", ".pyi", ".pyx", ".c", ".h", ".js", ".ts", ".html", ".json", ".toml",
            ".txt", ".rst", ".md", ".cfg", ".yaml", ".yml", ".sh"}


def corpus(every: int) -> list[tuple[str, str]]:
    # bench_decontam_pii.py's corpus, copied so an older tree can run this file too
    paths = sysconfig.get_paths()
    files = sorted(p for root in {paths["stdlib"], paths["purelib"]}
                   for p in Path(root).rglob("*") if p.suffix in SUFFIXES and p.is_file())
    docs = [(str(f), f.read_text(errors="replace")) for f in files[::every]]
    from pydoc_data.topics import topics
    return docs + [(f"pydoc:{k}", topics[k]) for k in sorted(topics)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("set", choices=["he", "all"])
    parser.add_argument("every", type=int)
    parser.add_argument("--mbpp", default=str(DATA / "mbpp_sanitized_sample.jsonl"))
    parser.add_argument("--gsm8k", default=str(DATA / "gsm8k_test_sample.jsonl"))
    args = parser.parse_args()
    benchmarks: list = ["humaneval"]
    if args.set == "all":
        benchmarks += ["mmlu", {"name": "mbpp", "file": args.mbpp, "hub": False},
                       {"name": "gsm8k", "file": args.gsm8k, "hub": False}]
    docs = corpus(args.every)
    started = time.process_time()
    stage = Decontaminate(DecontaminateParams(benchmarks=benchmarks))
    stage.setup()
    setup = time.process_time() - started
    started = time.process_time()
    hits = [(path, m.label) for path, text in docs if (m := stage.matcher.find(text))]
    find = time.process_time() - started
    print(json.dumps({"code": matcher_module.__file__, "set": args.set,
                      "MB": round(sum(len(t.encode()) for _, t in docs) / 1e6, 1),
                      "setup_cpu": round(setup, 2), "find_cpu": round(find, 2),
                      "total_cpu": round(setup + find, 2), "hits": hits[:5]}))


if __name__ == "__main__":
    main()
