#!/usr/bin/env bash
# Best effort: start a throwaway PostgreSQL on loopback for the store tests.
# Prints "URL DATA_DIR" on success; exits non-zero (and the tests skip, saying so) otherwise.
set -euo pipefail
find_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
bin=$(find_bin || true)
if [ -z "$bin" ]; then
  timeout 300 apt-get update -qq >/dev/null 2>&1
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq postgresql >/dev/null 2>&1
  bin=$(find_bin)
fi
id postgres >/dev/null 2>&1
dir=$(mktemp -d /tmp/rayon-pg.XXXXXX)
chown postgres "$dir"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
su postgres -s /bin/sh -c "$bin/initdb -D $dir/data -A trust -U postgres" >/dev/null
su postgres -s /bin/sh -c "$bin/pg_ctl -D $dir/data -l $dir/log -w -o '-p $port -k $dir -c listen_addresses=127.0.0.1' start" >/dev/null
echo "postgresql+psycopg://postgres@127.0.0.1:$port/postgres $dir"
