#!/bin/sh
# build.sh DIR [OUT]: builds the Go driver in folder DIR into OUT/driver (default DIR/build), and its
# plain loop (DIR/plain.go, a program of its own: `//go:build ignore` keeps it out of the driver's
# package) into OUT/plain. Modules come from the Go module proxy once (pinned by the driver's
# go.sum), then from the module cache: offline after that.
# GOTOOLCHAIN, when set (clientlab run --runtimes go=…), picks the toolchain, and the build's go.mod
# names that toolchain's language version, as a user's module does once they upgrade: a binary's
# GODEBUG defaults follow the main module's `go` line, not the toolchain that compiled it.
set -eu
out=${2:-$1/build}
cd "$1"
PATH="$PATH:/usr/local/go/bin" # where the machine image keeps Go
export PATH
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -n "${GOTOOLCHAIN:-}" ] && [ "$GOTOOLCHAIN" != local ] && [ "$GOTOOLCHAIN" != auto ]; then
  cp go.mod "$out/go.mod"
  cp go.sum "$out/go.sum" 2>/dev/null || : >"$out/go.sum"
  language=$(echo "${GOTOOLCHAIN#go}" | cut -d. -f1-2)
  go mod edit -modfile="$out/go.mod" -go="$language" -toolchain=none
  set -- -modfile="$out/go.mod"
else
  set --
fi
go build "$@" -trimpath -buildvcs=false -o "$out/driver" .
if [ -f plain.go ]; then
  go build "$@" -trimpath -buildvcs=false -o "$out/plain" plain.go
fi
