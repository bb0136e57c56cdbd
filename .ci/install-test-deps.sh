#!/usr/bin/env bash
# Installs the package with its test extras (CPU torch first: megatron-core needs torch).
set -euo pipefail
pip install -q -e '.[test]'
