#!/bin/sh
# Build one Java driver: compile its sources with ../_lib/src, copy its run-time jars to target/lib.
# Every plugin and dependency version is fixed (_lib/pom.xml, the driver's pom.xml), so once they
# are in the local Maven repository (~/.m2) the build needs no network: try offline first.
set -e
cd "$1"
if ! mvn -B -q -o clean package >/dev/null 2>&1; then
    mvn -B -q clean package
fi
# the library's plain loop, compiled on its own against the run-time jars (no lab sources)
if [ -f plain.java ]; then
    javac --release 17 -d target/plain -cp "target/lib/*" plain.java
fi
