#!/usr/bin/env bash
# Prints the path of a Python 3.11+ interpreter (the lab and the Python drivers need 3.11).
for candidate in python3.11 "$HOME/.pyenv/versions/3.11.7/bin/python3.11" python3; do
  if command -v "$candidate" >/dev/null 2>&1 &&
     "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    command -v "$candidate"
    exit 0
  fi
done
echo "clientlab: needs Python 3.11 or newer (python3.11 on PATH)" >&2
exit 1
