#!/usr/bin/env bash
# The whole test suite: set-up, lint, architecture contracts, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
PYTHONPATH=src .venv/bin/lint-imports
# every check runs: a skip (a missing oracle) fails the suite, see tests/conftest.py
export SCELLIS_STRICT=1
.venv/bin/pytest "$@"
