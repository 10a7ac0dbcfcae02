#!/usr/bin/env bash
# A 3-node KRaft Kafka cluster on 127.0.0.1 (each node broker and controller, one quorum), built from scripts/kafka.sh:
# replication factor 3 by default and for the internal topics, min.insync.replicas=2, so a write acknowledged with
# acks=all is on two brokers at least and one broker may die without losing or refusing anything.
#   scripts/kafka-cluster.sh start | stop | status | brokers | kill N | start-node N
# Env: KAFKA_CLUSTER_DIR (default <repo>/.kafka-cluster), KAFKA_CLUSTER_PORT (the first broker's port, default 29092:
#      brokers on P, P+1, P+2, controllers on P+100…P+102), KAFKA_LIBS_DIR (the jars, default <repo>/.kafka/libs,
#      fetched once by scripts/kafka.sh), KAFKA_HEAP_OPTS (default -Xmx384m -Xms128m per node).
# `kill N` is a crash (SIGKILL of node N, 1-3); `start-node N` brings it back with its data.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${KAFKA_CLUSTER_DIR:-$REPO/.kafka-cluster}"
BASE="${KAFKA_CLUSTER_PORT:-29092}"
export KAFKA_LIBS_DIR="${KAFKA_LIBS_DIR:-$REPO/.kafka/libs}"
export KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx384m -Xms128m}"
NODES=(1 2 3)
log() { echo "[kafka-cluster] $*" >&2; }

voters() { local v=() n; for n in "${NODES[@]}"; do v+=("$n@127.0.0.1:$((BASE + 99 + n))"); done; (IFS=,; echo "${v[*]}"); }
brokers() { local b=() n; for n in "${NODES[@]}"; do b+=("127.0.0.1:$((BASE + n - 1))"); done; (IFS=,; echo "${b[*]}"); }

# One cluster id for every node's storage, kept with the cluster.
cluster_id() {
  mkdir -p "$DIR"
  if [[ ! -s "$DIR/cluster.id" ]]; then
    # Any 16 bytes, base64url without padding, is a valid KRaft cluster id; but kafka-storage reads one that starts
    # with '-' (1 in 64) as an option and refuses to format, so those are drawn again.
    local id
    until id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')" && [[ "$id" != -* ]]; do :; done
    echo "$id" >"$DIR/cluster.id"
  fi
  cat "$DIR/cluster.id"
}

node() { # node N <kafka.sh command>
  local n="$1"; shift
  KAFKA_HOME_DIR="$DIR/node$n" KAFKA_PORT=$((BASE + n - 1)) KAFKA_CONTROLLER_PORT=$((BASE + 99 + n)) \
    KAFKA_NODE_ID="$n" KAFKA_QUORUM_VOTERS="$(voters)" KAFKA_CLUSTER_ID="$(cluster_id)" \
    KAFKA_REPLICATION_FACTOR=3 KAFKA_MIN_ISR=2 bash "$REPO/scripts/kafka.sh" "$@"
}

pid_of() { cat "$DIR/node$1/kafka.pid" 2>/dev/null; }

wait_all() {
  local n
  for n in "${NODES[@]}"; do
    # Each node answers once the quorum has a leader and it has joined as a broker.
    KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-120}" node "$n" start
  done
}

case "${1:-start}" in
  start)
    KAFKA_LIBS_DIR="$KAFKA_LIBS_DIR" bash "$REPO/scripts/kafka.sh" jars # fetched once, then a check of the marker
    for n in "${NODES[@]}"; do KAFKA_START_WAIT=0 node "$n" start; done
    wait_all
    log "up: $(brokers)"
    ;;
  stop) for n in "${NODES[@]}"; do node "$n" stop || true; done ;;
  status) for n in "${NODES[@]}"; do node "$n" status || true; done ;;
  brokers) brokers ;;
  kill)
    n="${2:?node 1-3}"; pid="$(pid_of "$n")" || { log "node $n not running"; exit 1; }
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    rm -f "$DIR/node$n/kafka.pid"
    log "node $n killed (pid $pid)"
    ;;
  start-node) n="${2:?node 1-3}"; node "$n" start ;;
  # Its data goes too, so no controlled shutdown (the last node of a quorum waits 20 s for one that cannot happen).
  destroy) for n in "${NODES[@]}"; do [[ -n "$(pid_of "$n")" ]] && "$0" kill "$n"; done; rm -rf "$DIR" ;;
  *) echo "usage: $0 start|stop|status|brokers|kill N|start-node N|destroy" >&2; exit 2 ;;
esac
