#!/usr/bin/env bash
# build-venv.sh DIR: make DIR/.venv with Python 3.11+ and install DIR/requirements.txt into it.
# requirements.txt pins every package, transitive ones included (pip freeze style), and is
# installed with --no-deps, so a build installs exactly what is listed, nothing resolved anew.
set -euo pipefail
dir=${1:?usage: build-venv.sh DRIVER_DIR}
dir=$(cd "$dir" && pwd)

python=$("$(dirname "$0")/../../../setup/find-python.sh")

# start clean so a changed requirements.txt never leaves stale packages behind
rm -rf "$dir/.venv"
"$python" -m venv "$dir/.venv"
"$dir/.venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$dir/requirements.txt"
# --no-deps skips resolution: check that the pins are complete and consistent
"$dir/.venv/bin/pip" check --disable-pip-version-check
