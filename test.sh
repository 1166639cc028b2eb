#!/usr/bin/env bash
# Runs the lab's tests: the bench server's (go test), then everything else (pytest).
# Expects ./setup.sh to have run (the README's test command runs both).
set -euo pipefail
cd "$(dirname "$0")"
export GOFLAGS=${GOFLAGS:--buildvcs=false}
export PATH="$PATH:/usr/local/go/bin"  # where the machine image keeps Go
echo "== go test (bench server, network lab)"
(cd server && go test ./...)
(cd netlab && go test ./...)
echo "== pytest"
.venv/bin/python -m pytest "$@"
