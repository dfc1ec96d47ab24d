#!/usr/bin/env bash
# Create (or reuse) the project's environment and system packages. Called by `make`.
#
# Two layers, so that no checkout ever runs another checkout's code:
#   * a *base* environment with every dependency (torch 2.13 CPU first, then the rest) and NOT the package,
#     cached under ~/.cache/oscsim/base-<hash of pyproject.toml + this script>: the slow part, shared;
#   * a per-checkout `.venv/` (a real directory inside this checkout, a few MB): a bare venv whose
#     site-packages reaches the base through a .pth file and which holds the editable install of *this*
#     checkout only. A second clone builds its own .venv in seconds and leaves this one alone.
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

# The base is keyed on what it installs (dependencies, extras, Python, this script), not on the whole
# pyproject.toml: a new entry point re-installs only this checkout's package, not torch.
DEPS=$("$PY" -c 'import json, sys, tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
print(json.dumps([p.get("dependencies"), p.get("optional-dependencies"), sys.version_info[:2]], sort_keys=True))')
# bump BASE_RECIPE when the way the base is built changes (not for edits elsewhere in this script)
BASE_RECIPE=2
HASH=$( { echo "$DEPS"; echo "recipe $BASE_RECIPE"; } | sha256sum | cut -c1-16)
CACHE=${OSCSIM_VENV_CACHE:-$HOME/.cache/oscsim}
BASE="$CACHE/base-$HASH"
if [ ! -f "$BASE/.complete" ]; then
  echo "[setup] building the shared dependency environment in $BASE (one-off, a few minutes)"
  rm -rf "$BASE"
  mkdir -p "$CACHE"
  "$PY" -m venv "$BASE"
  "$BASE/bin/pip" install -q --upgrade pip setuptools wheel
  # torch first, pinned: this wheel is the CPU build on the project's machines; a looser requirement
  # resolved later would pull a multi-GB CUDA build.
  "$BASE/bin/pip" install -q torch==2.13.0
  # The dependencies (and the test/dev extras) only, read from pyproject.toml: the package itself is never
  # built here (an in-tree build would leave an oscsim.egg-info whose entry points go stale).
  "$PY" -c 'import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(p["dependencies"] + p["optional-dependencies"]["test"] + p["optional-dependencies"]["dev"]))' \
    > "$BASE/requirements.txt"
  "$BASE/bin/pip" install -q -r "$BASE/requirements.txt"
  touch "$BASE/.complete"
fi
BASE_SITE=$("$BASE/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

# A .venv from an older layout (a symlink into the cache) or over another base is rebuilt.
if [ -L .venv ]; then rm -f .venv; fi
if [ -d .venv ] && [ "$(cat .venv/.oscsim-base 2>/dev/null)" != "$BASE" ]; then rm -rf .venv; fi
PROJ_HASH=$(sha256sum pyproject.toml | cut -c1-16)
if [ -f .venv/.complete ] && [ "$(cat .venv/.oscsim-project 2>/dev/null)" != "$PROJ_HASH" ]; then
  echo "[setup] pyproject.toml changed: re-installing this checkout's package (entry points, metadata)"
  PYTHONWARNINGS=ignore .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .  # no setuptools banners
  echo "$PROJ_HASH" > .venv/.oscsim-project
fi
if [ ! -f .venv/.complete ]; then
  echo "[setup] creating this checkout's environment in .venv (over $BASE)"
  rm -rf .venv
  "$PY" -m venv --without-pip .venv
  SITE=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  # an `import` line, so the base's own .pth files are processed too (site.addsitedir)
  echo "import site; site.addsitedir('$BASE_SITE')" > "$SITE/00-oscsim-base.pth"
  PYTHONWARNINGS=ignore .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .  # no setuptools banners
  echo "$BASE" > .venv/.oscsim-base
  echo "$PROJ_HASH" > .venv/.oscsim-project
  touch .venv/.complete
fi
