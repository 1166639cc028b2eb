#!/bin/sh
# Start a Java driver's plain loop (docs/driver-protocol.md §9): plain.sh DRIVER_FOLDER ARGS...
# The class Plain, compiled from the folder's plain.java by build.sh, runs on the client
# library's jars alone (target/lib), with the JVM flags run.sh gives the driver (stdout carries
# the loop's one line of figures alone).
here=$1
shift
exec java -Xmx1g -XX:+DisplayVMOutputToStderr -cp "$here/target/plain:$here/target/lib/*" Plain "$@"
