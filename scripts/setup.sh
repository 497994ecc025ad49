#!/usr/bin/env bash
# One-time set-up on a fresh Debian machine: system packages, a venv, the package + test deps.
# Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || need_apt+=(mesa-vulkan-drivers)
dpkg -s libvulkan1 >/dev/null 2>&1 || need_apt+=(libvulkan1)
# the browser tests: Debian's Chromium (WebGPU on SwiftShader), npm for web/'s packages
dpkg -s chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.scellis-deps
want=$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # torch is a test oracle only; the pinned CPU build lies on this machine's disk
  .venv/bin/python -m pip install -q "torch==2.13.0" 2> >(grep -v "is ignored: it is neither" >&2)
  .venv/bin/python -m pip install -q -e ".[test]" 2> >(grep -v "is ignored: it is neither" >&2)
  echo "$want" > "$stamp"
fi

# web/'s front-end packages (pyodide, esbuild, uplot...) from the committed lock file;
# Playwright drives the system Chromium, so `playwright install` is never run
lock_want=$(sha256sum web/package-lock.json | cut -c1-16)
if [ "$(cat web/node_modules/.scellis-lock 2>/dev/null)" != "$lock_want" ]; then
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
  echo "$lock_want" > web/node_modules/.scellis-lock
fi

# the TF.js import tests' oracle: the pure-JS @tensorflow/tfjs (its CPU backend) under node
tfjs_want=$(sha256sum tests/tfjs/package-lock.json | cut -c1-16)
if [ "$(cat tests/tfjs/node_modules/.scellis-lock 2>/dev/null)" != "$tfjs_want" ]; then
  (cd tests/tfjs && npm ci --no-audit --no-fund --loglevel=error)
  echo "$tfjs_want" > tests/tfjs/node_modules/.scellis-lock
fi
