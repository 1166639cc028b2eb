#!/bin/sh
# Start a Java driver: run.sh DRIVER_FOLDER MAIN_CLASS. The JVM flags are the ones a service
# would be deployed with: a fixed heap ceiling. Out of memory in a request's call is that
# request's error, reported through the protocol (Lab.java: elsewhere the driver exits), so not
# -XX:+ExitOnOutOfMemoryError, which ends the JVM before any Java code can say so. The JVM's own
# words (its warnings, its out-of-memory line) go to stderr: stdout carries protocol lines alone.
# The JDK's defaults stay otherwise (G1 collector, tiered JIT, class data sharing).
here=$1
main=$2
shift 2
exec java -Xmx1g -XX:+DisplayVMOutputToStderr -cp "$here/target/classes:$here/target/lib/*" "$main" "$@"
