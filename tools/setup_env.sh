#!/usr/bin/env bash
# Create (or reuse) the project's virtual environment and system packages. Called by `make`.
#
# The environment is cached outside the checkout, keyed on a hash of pyproject.toml and this script, and
# linked at .venv: a clean clone on a machine that already built the same environment reuses it (CI does not
# reinstall torch every run); any change to the dependencies makes a new one. The package itself is
# installed editable from *this* checkout every time the link points elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
if ! command -v ngspice >/dev/null 2>&1; then
  echo "[setup] installing ngspice (Debian) for the SPICE cross-checks"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq ngspice >/dev/null
fi

HASH=$(cat pyproject.toml tools/setup_env.sh | sha256sum | cut -c1-16)
CACHE=${OSCSIM_VENV_CACHE:-$HOME/.cache/oscsim}
VENV="$CACHE/venv-$HASH"
if [ ! -f "$VENV/.complete" ]; then
  echo "[setup] building the environment in $VENV (one-off, a few minutes)"
  rm -rf "$VENV"
  mkdir -p "$CACHE"
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip setuptools wheel
  # torch first, pinned: this wheel is the CPU build on the project's machines; a looser requirement
  # resolved later would pull a multi-GB CUDA build.
  "$VENV/bin/pip" install -q torch==2.13.0
  "$VENV/bin/pip" install -q -e ".[test]"
  echo "$ROOT" > "$VENV/.oscsim-src"
  touch "$VENV/.complete"
fi
if [ "$(cat "$VENV/.oscsim-src" 2>/dev/null)" != "$ROOT" ]; then
  echo "[setup] pointing the environment at this checkout"
  "$VENV/bin/pip" install -q --no-deps --no-build-isolation -e .
  echo "$ROOT" > "$VENV/.oscsim-src"
fi
if [ -e .venv ] && [ ! -L .venv ]; then rm -rf .venv; fi
ln -sfn "$VENV" .venv
