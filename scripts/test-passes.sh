#!/usr/bin/env bash
# make test's two pytest passes, side by side: every test on SQLite (its progress shown as it
# goes) and, at the same time, the tests marked `database` again on a throwaway PostgreSQL
# (scripts/with-postgres.sh), its output kept in a file and shown when both have ended. Most
# tests wait on their servers rather than compute, so the second pass fits in the first one's
# idle time (docs/operations.md, "Tests", has the figures). The PostgreSQL pass runs with
# TEST_RUN=1: its servers' ports are apart from the first pass's (tests/live_server.py,
# own_ports), and it leaves pytest's cache to the first pass.
# Usage: scripts/test-passes.sh PYTHON PYTEST-OPTIONS...; the status is the first failing pass's.
set -euo pipefail
python=$1
shift
log=$(mktemp /tmp/rebalance-lab-postgres-pass.XXXXXX)
TEST_RUN=1 scripts/with-postgres.sh "$python" -m pytest -n 1 -m database -p no:cacheprovider "$@" >"$log" 2>&1 &
postgres=$!
trap 'kill "$postgres" 2>/dev/null || true; rm -f "$log"' EXIT
echo "the PostgreSQL pass runs beside this one (its output follows this pass's)"
sqlite=0
"$python" -m pytest -n 2 "$@" || sqlite=$?
wait "$postgres" && pg=0 || pg=$?
echo
echo "=== the tests that use Django's database, again on PostgreSQL ==="
cat "$log"
[ "$sqlite" -ne 0 ] && exit "$sqlite"
exit "$pg"
