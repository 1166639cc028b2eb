#!/usr/bin/env bash
# Soak test of the bench server: wrk with many connections for a long time against a mix of its
# resources, the counters reset every few seconds as the lab does between trials; the server's
# RSS is sampled throughout. docs/reliability.md keeps the figures of the last run.
#
#   server/soak.sh [SECONDS [CONNECTIONS]]        defaults: 600 s, 1000 connections
#
# Needs wrk; uses the lab's certificates and server binary ($CLIENTLAB_HOME, default .lab).
# Loopback only. It is a load test: run it on a quiet machine, not next to measurements.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TOTAL=${1:-600}
CONNECTIONS=${2:-1000}
THREADS=${SOAK_THREADS:-2}
RESET_EVERY=${SOAK_RESET_EVERY:-5}
LAB_HOME=${CLIENTLAB_HOME:-$PWD/.lab}
BIN=${SOAK_SERVER:-$LAB_HOME/bin/clientlab-server}
command -v wrk >/dev/null || { echo "soak: wrk is not installed" >&2; exit 2; }
[[ -x "$BIN" ]] || { echo "soak: $BIN is missing (run ./setup.sh)" >&2; exit 2; }

# every connection is a file descriptor, in wrk and in the server
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if (( $(ulimit -n) < CONNECTIONS * 2 + 100 )); then
  ulimit -n $((CONNECTIONS * 2 + 100)) 2>/dev/null || { echo "soak: cannot raise ulimit -n to $((CONNECTIONS * 2 + 100))" >&2; exit 2; }
fi

work=$(mktemp -d)
SERVER_PID=""
cleanup() {
  exec 3>&- 2>/dev/null || true        # closing the server's stdin stops it
  [[ -n "$SERVER_PID" ]] && { sleep 0.5; kill "$SERVER_PID" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT

# the control secret goes on the server's stdin (a FIFO kept open on fd 3), the header in a file
secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf 'X-Clientlab-Secret: %s\n' "$secret" > "$work/header"
mkfifo "$work/stdin"
"$BIN" --listen 127.0.0.1 --tls-cert "$LAB_HOME/tls/server.pem" --tls-key "$LAB_HOME/tls/server-key.pem" \
  < "$work/stdin" > "$work/out" 2> "$work/err" &
SERVER_PID=$!
exec 3> "$work/stdin"
echo "$secret" >&3
for _ in $(seq 100); do [[ -s "$work/out" ]] && break; sleep 0.1; done
line=$(head -1 "$work/out")
[[ "$line" == *listening* ]] || { echo "soak: server did not start: $line $(cat "$work/err")" >&2; exit 1; }
port() { sed -E "s/.*\"$1\":([0-9]+).*/\1/" <<<"$line"; }
HTTP=$(port http)
CONTROL=$(port control)
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status"; }
control() { curl -sf -H @"$work/header" -X "$1" "http://127.0.0.1:$CONTROL$2"; }

# a mix of the public resources (and a few refused requests), one per request in turn
cat > "$work/mix.lua" <<'EOF'
local paths = {
  {"GET", "/bytes/1024"}, {"GET", "/bytes/1024"}, {"GET", "/bytes/1024"}, {"GET", "/bytes/16384"},
  {"GET", "/json/4096"}, {"GET", "/json/335114"}, {"GET", "/feeds/7"}, {"GET", "/feeds/42"},
  {"GET", "/redirect/1?to=/bytes/10"}, {"GET", "/bytes/100?gzip=1"},
  {"POST", "/echo", "a=1&b=2&code=x"}, {"GET", "/redirect/1?to=/%5Cexample.com"},
  {"GET", "/json/100000?delay_ms=1"}, {"GET", "/no/such/thing"},
}
local i = 0
request = function()
  i = i % #paths + 1
  local p = paths[i]
  local headers = {["Accept-Encoding"] = "gzip"}
  if p[3] then headers["Content-Type"] = "application/x-www-form-urlencoded" end
  return wrk.format(p[1], p[2], headers, p[3])
end
EOF

echo "soak: server pid $SERVER_PID, http :$HTTP; $CONNECTIONS connections, $THREADS wrk threads, ${SECONDS_TOTAL}s; ulimit -n $(ulimit -n)"
rss_idle=$(rss_kb)
echo "soak: RSS idle ${rss_idle} kB"
wrk -t"$THREADS" -c"$CONNECTIONS" -d"${SECONDS_TOTAL}s" --timeout 10s -s "$work/mix.lua" "http://127.0.0.1:$HTTP" \
  > "$work/wrk" 2>&1 &
WRK_PID=$!
started=$(date +%s)
rss_1min="" rss_max=0 samples=()
while kill -0 "$WRK_PID" 2>/dev/null; do
  sleep "$RESET_EVERY"
  control POST /reset > /dev/null || { echo "soak: control port failed" >&2; break; }
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "soak: the server died: $(cat "$work/err")" >&2; exit 1; }
  now=$(( $(date +%s) - started ))
  rss=$(rss_kb)
  (( rss > rss_max )) && rss_max=$rss
  [[ -z "$rss_1min" && $now -ge 60 ]] && rss_1min=$rss
  if (( now % 60 < RESET_EVERY )); then samples+=("${now}s:${rss}kB"); echo "soak: ${now}s RSS ${rss} kB"; fi
done
wait "$WRK_PID" || true
rss_end=$(rss_kb)
cat "$work/wrk"
echo "soak: still serving after the run: $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP/bytes/1")"
echo "soak: RSS idle ${rss_idle} kB, after 1 min ${rss_1min:-n/a} kB, end ${rss_end} kB, max ${rss_max} kB"
echo "soak: samples ${samples[*]}"
