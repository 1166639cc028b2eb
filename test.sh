#!/usr/bin/env bash
# Runs the lab's tests: the bench server's (go test), then everything else (pytest).
# Expects ./setup.sh to have run (the README's test command runs both).
set -euo pipefail
cd "$(dirname "$0")"
export GOFLAGS=${GOFLAGS:--buildvcs=false}
export PATH="$PATH:/usr/local/go/bin:$HOME/.cargo/bin"  # where the machine image keeps Go and Rust
echo "== go test (bench server, network lab, the Go drivers' helper)"
(cd server && go test ./...)
(cd netlab && go test ./...)
(cd drivers/go/_lib && go test ./...)
echo "== cargo test (the Rust drivers' helper)"
(cd drivers/rust && cargo test --locked -q -p labdriver)
echo "== pytest"
.venv/bin/python -m pytest "$@"
