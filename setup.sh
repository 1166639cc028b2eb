#!/usr/bin/env bash
# Installs everything the lab needs on Debian 12 (as root), idempotently:
# apt packages (the lab's and every driver's), the lab's venv, certificates, the bench server,
# and the default run's drivers (the others build on first use). A second run skips what is
# already there.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
LAB_HOME=${CLIENTLAB_HOME:-$ROOT/.lab}
export GOFLAGS=${GOFLAGS:--buildvcs=false}
export PATH="$PATH:/usr/local/go/bin:$HOME/.cargo/bin"  # where the machine image keeps Go and Rust
command -v go >/dev/null || { echo "setup: needs Go (https://go.dev) on PATH" >&2; exit 1; }
say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

PYTHON=$(setup/find-python.sh)

# 1. apt packages: the lab's list plus each driver manifest's `apt` field
packages=$(grep -v '^\s*#' setup/apt-packages.txt | xargs)
packages+=" $("$PYTHON" - <<'PY'
import pathlib, tomllib
names = set()
for path in pathlib.Path("drivers").glob("**/driver.toml"):
    names.update(tomllib.loads(path.read_text()).get("apt", []))
print(" ".join(sorted(names)))
PY
)"
missing=()
for pkg in $packages; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
  # the lab starts its own nginx, sshd, redis and postgres when it needs one: no system service listening
  # (a host the lab reaches over SSH had openssh-server before this ran: only what was installed here is stopped)
  for service in nginx:nginx openssh-server:ssh redis-server:redis-server postgresql:postgresql; do
    if [[ " ${missing[*]} " == *" ${service%%:*} "* ]]; then
      (systemctl disable --now "${service#*:}" || service "${service#*:}" stop) >/dev/null 2>&1 || true
    fi
  done
else
  say "Debian packages: all present"
fi

# 2. the lab's own venv (pinned in requirements.lock)
stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
venv_stamp=$(stamp_of requirements.lock pyproject.toml)
if [[ ! -x .venv/bin/python || "$(cat .venv/.clientlab-stamp 2>/dev/null)" != "$venv_stamp" ]]; then
  say "making the lab's venv (.venv)"
  "$PYTHON" -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.lock
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
  echo "$venv_stamp" > .venv/.clientlab-stamp
else
  say "lab venv: up to date"
fi

# 3. the lab CA and the bench server's certificate
setup/certs.sh "$LAB_HOME/tls"

# 4. the bench server (Go)
# the same stamp as clientlab/servers/binary.py's, which rebuilds a server older than its sources
server_stamp=$(find server -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 | LC_ALL=C sort -z | xargs -0 cat | sha256sum | cut -d' ' -f1)
if [[ ! -x "$LAB_HOME/bin/clientlab-server" || "$(cat "$LAB_HOME/bin/.server-stamp" 2>/dev/null)" != "$server_stamp" ]]; then
  say "building the bench server"
  mkdir -p "$LAB_HOME/bin"
  (cd server && go build -o "$LAB_HOME/bin/clientlab-server" .)
  echo "$server_stamp" > "$LAB_HOME/bin/.server-stamp"
else
  say "bench server: up to date"
fi

# 4b. the host probe (C): the host's slow phases on the driver's core (clientlab/measuring/hostprobe)
probe_src=clientlab/measuring/hostprobe/hostprobe.c
probe_stamp=$(sha256sum "$probe_src" | cut -d' ' -f1)
if [[ ! -x "$LAB_HOME/bin/clientlab-hostprobe" || "$(cat "$LAB_HOME/bin/.hostprobe-stamp" 2>/dev/null)" != "$probe_stamp" ]]; then
  say "building the host probe"
  mkdir -p "$LAB_HOME/bin"
  gcc -O2 -Wall -o "$LAB_HOME/bin/clientlab-hostprobe" "$probe_src"
  echo "$probe_stamp" > "$LAB_HOME/bin/.hostprobe-stamp"
else
  say "host probe: up to date"
fi

# 5. the network lab's programs (Go): the lab DNS, the latency proxy (Toxiproxy, pinned in netlab/go.mod)
#    and the link relay
netlab_stamp=$(find netlab -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 | sort -z | xargs -0 cat | sha256sum | cut -d' ' -f1)
if [[ ! -x "$LAB_HOME/bin/clientlab-dns" || ! -x "$LAB_HOME/bin/toxiproxy-server" || ! -x "$LAB_HOME/bin/clientlab-link" \
      || "$(cat "$LAB_HOME/bin/.netlab-stamp" 2>/dev/null)" != "$netlab_stamp" ]]; then
  say "building the network lab (lab DNS, latency proxy, link relay)"
  (cd netlab && go build -o "$LAB_HOME/bin/clientlab-dns" ./cmd/clientlab-dns \
     && go build -o "$LAB_HOME/bin/toxiproxy-server" github.com/Shopify/toxiproxy/v2/cmd/server \
     && go build -o "$LAB_HOME/bin/clientlab-link" ./cmd/clientlab-link)
  echo "$netlab_stamp" > "$LAB_HOME/bin/.netlab-stamp"
else
  say "network lab: up to date"
fi

# 6. the default run's drivers (each skipped while its build inputs are unchanged); every other
#    driver, and the runtime lines the experiments run on, build on first use (or: clientlab build --all)
say "building the default run's drivers (the others build on first use)"
.venv/bin/clientlab build
say "done"
