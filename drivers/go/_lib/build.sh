#!/bin/sh
# Builds the Go driver in folder $1 into $1/build/driver. Modules come from the Go module
# proxy once (pinned by the driver's go.sum), then from the module cache: offline after that.
set -eu
cd "$1"
PATH="$PATH:/usr/local/go/bin" # where the machine image keeps Go
export PATH
mkdir -p build
exec go build -trimpath -buildvcs=false -o build/driver .
