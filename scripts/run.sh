#!/usr/bin/env bash
# The live demo: a local Redis (channel layer and Celery broker), the database schema, a Celery
# worker and Celery beat under supervisord (housekeeping: offset expiry, log compaction, the
# report), then Daphne with the coordinator runtime and the demo groups. Ctrl-C stops every process this script started:
# the server first (its consumers leave their groups, its state is flushed), then supervisord
# with the Celery processes, then Redis. Logs: $STATE_DIR/redis.log, supervisord.log,
# celery-worker.log, celery-beat.log.
# Settings: HOST, PORT (the site), KAFKA_PORT (Kafka clients' bootstrap port), REDIS_PORT (a
# Redis already listening there is reused), STATE_DIR (var: the run's databases, record log,
# secret key, staff password and logs; another directory and other ports run a second lab
# beside the first), SECRET_KEY (else the one made once in $STATE_DIR/secret-key).
set -euo pipefail
cd "$(dirname "$0")/.."

HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
KAFKA_PORT=${KAFKA_PORT:-9092}
REDIS_PORT=${REDIS_PORT:-6379}
PY=$PWD/.venv/bin/python
STATE_DIR=$(realpath -m "${STATE_DIR:-var}")
export STATE_DIR
mkdir -p "$STATE_DIR"

redis_pid=""
server_pid=""
supervisor_pid=""
# TERM to a process started with setsid, up to 15 s to finish, then KILL to its whole session
# (a Celery worker's pool processes too).
end() {
    local pid=$1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
}
stop() {
    trap - EXIT INT TERM
    end "$server_pid"
    end "$supervisor_pid"
    if [ -n "$redis_pid" ]; then
        kill -TERM "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
}
trap stop EXIT INT TERM

if redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
    echo "using the Redis already listening on port $REDIS_PORT"
else
    # Its own session: Ctrl-C reaches the server, and Redis outlives it until the server is done.
    setsid redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
        >"$STATE_DIR/redis.log" 2>&1 &
    redis_pid=$!
    for _ in $(seq 50); do
        redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 || {
        echo "error: redis-server did not start on port $REDIS_PORT (see $STATE_DIR/redis.log)" >&2
        exit 1
    }
fi
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"

# Sessions and CSRF tokens are signed with this installation's own key, made once.
if [ -z "${SECRET_KEY:-}" ] && [ ! -s "$STATE_DIR/secret-key" ]; then
    (umask 077 && "$PY" -c 'import secrets; print(secrets.token_urlsafe(50))' >"$STATE_DIR/secret-key")
    echo "created a secret key in $STATE_DIR/secret-key"
fi
export SECRET_KEY_FILE="$STATE_DIR/secret-key"

"$PY" manage.py migrate --noinput >/dev/null
"$PY" manage.py staffuser

# Housekeeping (docs/operations.md): beat sends the tasks on the schedules kept in the database,
# the worker runs them against the server's runtime. supervisord keeps both running (restarted
# when they exit, with backoff: "Supervision"); its own session, like Redis.
PYTHON=$PY setsid "$PWD/.venv/bin/supervisord" -c scripts/supervisord.conf &
supervisor_pid=$!
echo "Celery worker and beat started under supervisord (logs: $STATE_DIR/supervisord.log," \
    "$STATE_DIR/celery-worker.log, $STATE_DIR/celery-beat.log)"
# PORT=0 or KAFKA_PORT=0: the system picks; $STATE_DIR/ports.json says which, once serving.
setsid "$PY" manage.py serve --host "$HOST" --port "$PORT" --kafka-port "$KAFKA_PORT" \
    --ports-file "$STATE_DIR/ports.json" --demo &
server_pid=$!
wait "$server_pid"
