#!/usr/bin/env bash
# Start (or reuse) a throwaway PostgreSQL cluster for the pml-server tests and benches.
#
# Idempotent: installs PostgreSQL with apt-get when it is missing, creates a cluster in
# ${PML_PG_DIR:-/tmp/pml-postgres-<port>} listening on 127.0.0.1 only (no TCP on other
# interfaces, Unix socket inside the data dir), creates the database `pml_test`, and prints the
# connection URL alone on stdout. Everything else goes to stderr.
#
#   export PML_TEST_DATABASE_URL="$(scripts/postgres.sh)"
#   scripts/postgres.sh stop        # stop the cluster started by this script
#
# Environment: PML_PG_PORT (first port tried, default 54329), PML_PG_DIR (data dir).
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

find_pg_bin() {
  local dir
  if command -v pg_config >/dev/null 2>&1; then
    dir="$(pg_config --bindir 2>/dev/null || true)"
    if [[ -x "$dir/initdb" ]]; then echo "$dir"; return 0; fi
  fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x "$dir/initdb" ]]; then echo "$dir"; return 0; fi
  done
  return 1
}

if ! PG_BIN="$(find_pg_bin)"; then
  log "PostgreSQL not found; installing it with apt-get"
  apt-get update >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2
  PG_BIN="$(find_pg_bin)"
fi

# initdb and postgres refuse to run as root: run them as the `postgres` system user then.
as_pg() {
  if [[ "$(id -u)" == "0" ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

data_dir_for() { echo "${PML_PG_DIR:-/tmp/pml-postgres-$1}"; }

running_in() { [[ -f "$1/postmaster.pid" ]] && as_pg "$PG_BIN/pg_ctl" -D "$1" status >/dev/null 2>&1; }

first_port="${PML_PG_PORT:-54329}"

# Safe to run while others do (engineers, test runs, a lead): one run at a time past this point,
# so that two first runs do not both initdb one folder or start one cluster twice. The cluster is
# shared: a second run reuses it; `stop` stops it for everyone.
if command -v flock >/dev/null 2>&1; then
  exec 9>"/tmp/pml-postgres-$first_port.lock"
  flock 9
fi

if [[ "${1:-}" == "stop" ]]; then
  dir="$(data_dir_for "$first_port")"
  if running_in "$dir"; then as_pg "$PG_BIN/pg_ctl" -D "$dir" -m fast stop >&2; fi
  exit 0
fi

port=""
for candidate in $(seq "$first_port" $((first_port + 20))); do
  dir="$(data_dir_for "$candidate")"
  if running_in "$dir"; then port="$candidate"; break; fi
  if ! port_in_use "$candidate"; then port="$candidate"; break; fi
done
[[ -n "$port" ]] || { log "no free port in $first_port..$((first_port + 20))"; exit 1; }
dir="$(data_dir_for "$port")"

if [[ ! -f "$dir/PG_VERSION" ]]; then
  log "creating cluster in $dir"
  mkdir -p "$dir"
  if [[ "$(id -u)" == "0" ]]; then chown postgres:postgres "$dir"; fi
  chmod 700 "$dir"
  as_pg "$PG_BIN/initdb" -D "$dir" -U postgres -A trust -E UTF8 --no-instructions >&2
fi

if ! running_in "$dir"; then
  log "starting cluster on 127.0.0.1:$port"
  as_pg "$PG_BIN/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=200 -c fsync=off" \
    start >&2 9>&- # the server must not inherit (and hold) the lock
fi

if ! as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname = 'pml_test'" | grep -q 1; then
  as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres pml_test >&2
fi

echo "postgres://postgres@127.0.0.1:$port/pml_test"
