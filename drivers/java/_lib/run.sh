#!/bin/sh
# Start a Java driver: run.sh DRIVER_FOLDER MAIN_CLASS. The JVM flags are the ones a service
# would be deployed with: a fixed heap ceiling, and exit (not limp on) when it runs out.
# The JDK's defaults stay otherwise (G1 collector, tiered JIT, class data sharing).
here=$1
main=$2
shift 2
exec java -Xmx1g -XX:+ExitOnOutOfMemoryError -cp "$here/target/classes:$here/target/lib/*" "$main" "$@"
