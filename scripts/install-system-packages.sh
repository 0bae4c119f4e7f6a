#!/usr/bin/env bash
# Installs the Debian packages the project needs on this kind of machine (Debian, root):
# redis-server (channel layer, Celery broker). Idempotent: does nothing when all are present.
set -euo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "error: missing Debian packages: ${missing[*]}; run as root or install them with apt-get" >&2
    exit 1
fi
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
