#!/usr/bin/env bash
# build-venv.sh DIR: make DIR/.venv with Python 3.11+ and install DIR/requirements.txt into it.
# requirements.txt pins every package, transitive ones included (pip freeze style), and is
# installed with --no-deps, so a build installs exactly what is listed, nothing resolved anew.
set -euo pipefail
dir=${1:?usage: build-venv.sh DRIVER_DIR}
dir=$(cd "$dir" && pwd)

find_python() {
  for candidate in python3.11 "$HOME/.pyenv/versions/3.11.7/bin/python3.11" python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      command -v "$candidate"; return
    fi
  done
  echo "build-venv.sh: needs Python 3.11 or newer (python3.11 on PATH)" >&2; exit 1
}
python=$(find_python)

# start clean so a changed requirements.txt never leaves stale packages behind
rm -rf "$dir/.venv"
"$python" -m venv "$dir/.venv"
"$dir/.venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$dir/requirements.txt"
# --no-deps skips resolution: check that the pins are complete and consistent
"$dir/.venv/bin/pip" check --disable-pip-version-check
