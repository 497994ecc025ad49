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
if [ "$#" -gt 0 ]; then
  exec .venv/bin/pytest "$@"
fi
# The browser tests spend most of their time waiting on Chromium's processes and the
# rest of the suite on one Python thread, so the two halves run side by side, each in a
# pytest process (and temp root) of its own: on 2 cores the suite takes about 60% of
# its serial time. The browser half's report is printed after the other's.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
.venv/bin/pytest tests/browser --basetemp="$scratch/browser" >"$scratch/browser.log" 2>&1 &
browser_pid=$!
rest_status=0
.venv/bin/pytest --ignore=tests/browser --basetemp="$scratch/rest" || rest_status=$?
browser_status=0
wait "$browser_pid" || browser_status=$?
echo "---- tests/browser ----"
cat "$scratch/browser.log"
if [ "$rest_status" -ne 0 ] || [ "$browser_status" -ne 0 ]; then
  echo "test suite failed: tests/browser exit $browser_status, the rest exit $rest_status"
  exit 1
fi
