#!/usr/bin/env bash
# Starts what the tests need when it is not already answering: PostgreSQL, Redis, Kafka.
# On this project's machines PostgreSQL and Redis are installed (and usually running); if they are
# missing entirely, they are installed from Debian's packages.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "[services] $*" >&2; }
open_port() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { for _ in $(seq 1 60); do open_port "$1" && return 0; sleep 0.5; done; return 1; }

install_if_missing() {
  local missing=()
  command -v pg_ctlcluster >/dev/null || missing+=(postgresql postgresql-contrib)
  command -v redis-server >/dev/null || missing+=(redis-server)
  if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

if ! open_port 5432; then
  install_if_missing
  log "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start || true
  wait_port 5432 || { log "PostgreSQL did not come up"; exit 1; }
fi
# Tests connect as postgres without a password (trust on 127.0.0.1), as the contract's defaults do.
for _ in $(seq 1 30); do psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.5; done

if ! open_port 6379; then
  install_if_missing
  log "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_port 6379 || { log "Redis did not come up"; exit 1; }
fi

bash "$REPO/scripts/kafka.sh" start
