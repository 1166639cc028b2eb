#!/bin/bash
# The plain loop of cli-curl (docs/driver-protocol.md §9): the curl command as a user scripts
# COUNT GETs of one URL. A command-line client's "client" is one curl process:
#   close:      a shell loop starting one curl per GET (a new process, so a new connection,
#               each time), as the driver does for every request;
#   keep-alive: one curl process given the URL COUNT times (a config file written before the
#               clock starts): curl keeps its connection from one URL to the next, as it does by
#               default.
# -w prints each GET's status and body size; the body itself goes to /dev/null, not into a
# shell variable (bash cannot hold the NUL bytes of a binary body). bash's EPOCHREALTIME is
# its only clock finer than a second (wall time, not monotonic).
# Usage: plain.sh URL COUNT MODE WARMUP_S (MODE keep-alive or close).
set -u
fail() { echo "plain cli-curl: $*" >&2; exit 1; }
[ $# -eq 4 ] && { [ "$3" = keep-alive ] || [ "$3" = close ]; } || fail "usage: plain.sh URL COUNT keep-alive|close WARMUP_S"
url=$1 count=$2 mode=$3 warmup=$4
[[ $count =~ ^[0-9]+$ ]] || fail "COUNT must be a whole number >= 0, not $count"
[[ $warmup =~ ^[0-9]*\.?[0-9]+$ ]] || fail "WARMUP_S must be a number of seconds >= 0, not $warmup"
scratch=$(mktemp -d) || fail "cannot make a scratch folder"
trap 'rm -rf "$scratch"' EXIT
out=$scratch/out
write_out='%{http_code} %{size_download}\n'
micros() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }

if [ "$mode" = keep-alive ]; then
    for ((i = 0; i < count; i++)); do printf 'url = "%s"\noutput = "/dev/null"\n' "$url"; done >"$scratch/urls"
fi
end=$(( $(micros) + $(awk -v s="$warmup" 'BEGIN { printf "%d", s * 1e6 }') ))
while (( $(micros) < end )); do
    curl -sS -o /dev/null "$url" || fail "GET $url failed (warm-up)"
done

start=$(micros)
if [ "$mode" = close ]; then
    for ((i = 0; i < count; i++)); do
        curl -sS -o /dev/null -w "$write_out" "$url" || fail "GET $url failed"
    done >"$out"
elif (( count > 0 )); then
    curl -sS -w "$write_out" -K "$scratch/urls" >"$out" || fail "GET $url failed"
else
    : >"$out"
fi
stop=$(micros)

awk -v count="$count" -v url="$url" -v micros=$((stop - start)) '
    $1 != "200" { printf "plain cli-curl: GET %s: status %s\n", url, $1 > "/dev/stderr"; bad = 1; exit 1 }
    { n++; bytes += $2 }
    END {
        if (bad) exit 1
        if (n != count) { printf "plain cli-curl: %d answers of the %d GETs\n", n, count > "/dev/stderr"; exit 1 }
        printf "{\"requests\": %d, \"bytes\": %d, \"seconds\": %.6f}\n", n, bytes, micros / 1e6
    }' "$out"
