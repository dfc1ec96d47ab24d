#!/usr/bin/env bash
# Create (or reuse) the project's environment and system packages. Called by `make`.
#
# Two layers, so that no checkout ever runs another checkout's code:
#   * a *base* environment with every dependency (torch 2.13 CPU first, then the rest) and NOT the package,
#     cached under ~/.cache/oscsim/base-<hash of pyproject.toml + this script>: the slow part, shared;
#   * a per-checkout `.venv/` (a real directory inside this checkout, a few MB): a bare venv whose
#     site-packages reaches the base through a .pth file and which holds the editable install of *this*
#     checkout only. A second clone builds its own .venv in seconds and leaves this one alone.
#
# Safe to run from several terminals at once: the base is built under a lock (flock on a file in the cache)
# in a folder of its own, and published by renaming a symbolic link onto `base-<hash>` (atomic), so no run
# ever sees, uses or deletes a half-built base; a run that finds the base being built waits for it. Each
# checkout's .venv is built under a lock on the checkout directory (its entry points name their own path, so
# it is built in place; `.complete` marks it finished).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
exec 9<"$ROOT"  # this checkout's lock, held until the script exits
if ! flock -n 9; then
  echo "[setup] waiting for another set-up of this checkout to finish"
  flock 9
fi
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
if ! command -v ngspice >/dev/null 2>&1; then
  echo "[setup] installing ngspice (Debian) for the SPICE cross-checks"
  # apt waits for the package lock another terminal's set-up may hold (instead of failing)
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq ngspice >/dev/null
fi
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  # headless Chromium renders the design study's front.html in the tests (tests/test_design_front_browser.py,
  # driven by selenium through Debian's chromedriver; nothing is downloaded at test time)
  echo "[setup] installing chromium and chromium-driver (Debian) for the browser test of front.html"
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium chromium-driver \
    >/dev/null
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
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.base-$HASH.lock"
  if ! flock -n 8; then
    echo "[setup] waiting for another set-up building $BASE"
    flock 8
  fi
fi
if [ ! -f "$BASE/.complete" ]; then  # still missing with the lock held: no one else is building it
  # left-overs of an interrupted build (ours, or an incomplete base of an older version of this script)
  rm -rf "$BASE".build.*
  if [ -L "$BASE" ]; then rm -f "$BASE"; elif [ -e "$BASE" ]; then rm -rf "$BASE"; fi
  BUILD=$(mktemp -d "$BASE.build.XXXXXX")  # the base's real folder: a venv is not relocatable, so it is built
  chmod 755 "$BUILD"                        # where it stays, and only the link `base-<hash>` to it is published
  echo "[setup] building the shared dependency environment in $BUILD (one-off, a few minutes)"
  "$PY" -m venv "$BUILD"
  "$BUILD/bin/pip" install -q --upgrade pip setuptools wheel
  # torch first, pinned: this wheel is the CPU build on the project's machines; a looser requirement
  # resolved later would pull a multi-GB CUDA build.
  "$BUILD/bin/pip" install -q torch==2.13.0
  # The dependencies (and the test/dev extras) only, read from pyproject.toml: the package itself is never
  # built here (an in-tree build would leave an oscsim.egg-info whose entry points go stale).
  "$PY" -c 'import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(p["dependencies"] + p["optional-dependencies"]["test"] + p["optional-dependencies"]["dev"]))' \
    > "$BUILD/requirements.txt"
  "$BUILD/bin/pip" install -q -r "$BUILD/requirements.txt"
  touch "$BUILD/.complete"
  ln -s "$(basename "$BUILD")" "$BASE.link.$$"
  mv -T "$BASE.link.$$" "$BASE"  # rename(2): atomic
  echo "[setup] the shared dependency environment is ready: $BASE"
fi
exec 8>&-
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
