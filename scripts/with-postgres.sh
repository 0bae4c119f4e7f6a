#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL of its own: `scripts/with-postgres.sh CMD ARGS...`
# (make test runs the tests that touch Django's database again this way). It initdb's a cluster
# in a new directory under /tmp, serves it on a Unix socket in that directory only (no TCP, so
# no port to choose or to collide on), makes a role `rebalance_lab` that may create databases
# (Django's test database, one per live server) and its database, then runs the command with
# DATABASE=postgres://rebalance_lab@/rebalance_lab?host=<that directory>. Afterwards, whatever
# the command did, the server is stopped and the directory removed; the command's exit status
# is the script's.
#
# PostgreSQL refuses to run as root: as root (CI), the cluster belongs to Debian's `postgres`
# user (created by the postgresql package, scripts/install-system-packages.sh) and its
# programs run through runuser; as anyone else, as that user. Durability is switched off
# (fsync, synchronous_commit): the cluster lives as long as the command.
set -euo pipefail

if [ $# -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi

bin=$(find /usr/lib/postgresql -mindepth 3 -maxdepth 3 -path '*/bin/initdb' -printf '%h\n' 2>/dev/null |
    sort -V | tail -n 1)
if [ -z "$bin" ]; then
    echo "error: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run make system" >&2
    exit 1
fi

root=false
if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || {
        echo "error: no postgres user to run PostgreSQL as (Debian's postgresql package makes it)" >&2
        exit 1
    }
    root=true
fi
# The cluster's programs, as its owner, from its directory (the caller's may be closed to it).
as_owner() {
    if $root; then
        (cd "$dir" && runuser -u postgres -- "$@")
    else
        "$@"
    fi
}

# /tmp, not $TMPDIR: the socket's path (directory + /.s.PGSQL.5432) must fit in 107 bytes.
dir=$(mktemp -d /tmp/rebalance-lab-pg.XXXXXX)
! $root || chown postgres: "$dir"
stop() {
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
    --no-sync >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    echo "error: initdb failed" >&2
    exit 1
}
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start \
    -o "-c listen_addresses='' -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    >/dev/null || {
    cat "$dir/postgres.log" >&2
    echo "error: PostgreSQL did not start (its log is above)" >&2
    exit 1
}
"$bin/psql" -h "$dir" -U postgres -d postgres -q -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE rebalance_lab LOGIN CREATEDB" \
    -c "CREATE DATABASE rebalance_lab OWNER rebalance_lab" >/dev/null

export DATABASE="postgres://rebalance_lab@/rebalance_lab?host=$dir"
echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on $dir: DATABASE=$DATABASE"
status=0
"$@" || status=$?
exit "$status"
