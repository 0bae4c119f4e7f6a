#!/usr/bin/env bash
# Installs the Debian packages the project needs on this kind of machine (Debian, root):
# redis-server (channel layer, Celery broker), chromium (the browser tests and bench/dashboard.py
# drive /usr/bin/chromium headless), and Node.js with npm when the machine has none (the
# dashboard's front-end libraries), and a Java runtime when there is no `java` (PySpark 4.3 runs
# Spark on Java 17 or 21: Debian's openjdk-17-jre-headless), and kcat (the Kafka tool people reach
# for first; the Kafka listener's tests list topics with `kcat -L`), prometheus with its promtool
# (tests/webapp/test_prometheus.py scrapes a real server with it and checks the alerting rules in
# docs/ with promtool), and PostgreSQL's server programs (make test runs the database tests again
# on a throwaway cluster of its own, scripts/with-postgres.sh; no cluster of the machine's is made
# or started). Idempotent: does nothing when all are present.
set -euo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || missing+=(prometheus)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "error: missing Debian packages: ${missing[*]}; run as root or install them with apt-get" >&2
    exit 1
fi
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if [[ " ${missing[*]} " == *" postgresql "* ]]; then
    mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.d/rebalance-lab.conf
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
