#!/usr/bin/env bash
# Runs the lab's tests: the bench server's (go test), the drivers' helpers on the golden transcript
# (drivers/contract), then everything else (pytest).
# Expects ./setup.sh to have run (the README's test command runs both).
# pytest runs in two passes: the tests that only check what drivers and the lab do, spread over
# worker processes; then the ones marked `serial` (they measure or time something), one at a
# time with nothing beside them. Arguments go to a single pytest run instead (./test.sh -k name).
set -euo pipefail
cd "$(dirname "$0")"
export GOFLAGS=${GOFLAGS:--buildvcs=false}
export PATH="$PATH:/usr/local/go/bin:$HOME/.cargo/bin"  # where the machine image keeps Go and Rust
echo "== every driver and runtime line built (set-up builds only the default run's)"
.venv/bin/clientlab build --all --experiments
echo "== go test (bench server, network lab, the Go drivers' helper)"
(cd server && go test -p 1 ./...)  # one package's server at a time: its timing-sensitive tests share the cores with no other
(cd netlab && go test ./...)
(cd drivers/go/_lib && go test ./...)
echo "== cargo test (the Rust drivers' helper, the golden transcript among its tests)"
(cd drivers/rust && cargo test --locked -q -p labdriver)
echo "== the golden transcript through the other helpers (Go's, Rust's and Python's run in their own tests)"
node --test --test-reporter=dot drivers/node/_lib/test/transcript.test.mjs drivers/node/_lib/test/undici-options.test.mjs
make -s -C drivers/c/_lib/test test
prove -Q drivers/perl/_lib/t
php drivers/php/_lib/test/transcript_test.php
ruby drivers/ruby/_lib/test/transcript_test.rb
make -s -C drivers/cpp/_lib/test test
(cd drivers/java/_lib/test && { mvn -B -q -o package >/dev/null || mvn -B -q package; } &&
  java -cp "target/classes:target/lib/*" clientlab.lab.TranscriptTest ../../../contract/transcript.json)
(cd drivers/kotlin/_lib/test && { mvn -B -q -o package >/dev/null || mvn -B -q package; } &&
  java -cp "target/classes:target/lib/*" clientlab.lab.KtorTranscriptTestKt ../../../contract/transcript.json)
if [[ $# -gt 0 ]]; then
  echo "== pytest $*"
  exec .venv/bin/python -m pytest "$@"
fi
workers=${CLIENTLAB_TEST_WORKERS:-4}  # most of these tests wait on drivers and links: more workers than cores
echo "== pytest: the tests that do not measure, on $workers workers"
.venv/bin/python -m pytest -m "not serial" -n "$workers" --dist loadgroup
echo "== pytest: the tests that measure, one at a time"
.venv/bin/python -m pytest -m serial
