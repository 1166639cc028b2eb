#!/usr/bin/env bash
# build-venv.sh DIR [VENV]: make VENV (default DIR/.venv) with Python 3.11+, or with $CLIENTLAB_PYTHON
# when set (clientlab run --runtimes python=…), and install DIR/requirements.txt into it.
# requirements.txt pins every package, transitive ones included (pip freeze style), and is
# installed with --no-deps, so a build installs exactly what is listed, nothing resolved anew.
set -euo pipefail
dir=${1:?usage: build-venv.sh DRIVER_DIR [VENV_DIR]}
dir=$(cd "$dir" && pwd)
venv=${2:-$dir/.venv}

python=${CLIENTLAB_PYTHON:-$("$(dirname "$0")/../../../setup/find-python.sh")}

# start clean so a changed requirements.txt never leaves stale packages behind
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$dir/requirements.txt"
# --no-deps skips resolution: check that the pins are complete and consistent
"$venv/bin/pip" check --disable-pip-version-check
