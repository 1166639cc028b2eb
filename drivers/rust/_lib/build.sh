#!/bin/sh
# build.sh PACKAGE [LIBRARY...]: build one Rust driver of clientlab in the shared workspace
# (drivers/rust: one Cargo.lock, one target/), exactly as locked. With LIBRARY names, check that
# the binary links those system libraries (a -sys crate may quietly build its own copy instead).
set -eu
package=${1:?usage: build.sh PACKAGE [LIBRARY...]}
shift
workspace=$(cd "$(dirname "$0")/.." && pwd)
cargo=${CARGO:-$(command -v cargo || echo "$HOME/.cargo/bin/cargo")}
if [ ! -x "$cargo" ] && ! command -v "$cargo" >/dev/null 2>&1; then
    echo "build.sh: cargo not found (install Rust with rustup, or set CARGO)" >&2
    exit 1
fi
cd "$workspace"
"$cargo" build --release --locked -p "$package"
for library in "$@"; do
    if ! ldd "target/release/$package" | grep -q "$library"; then
        echo "build.sh: target/release/$package is not linked against the system's $library" >&2
        exit 1
    fi
done
