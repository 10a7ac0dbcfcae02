#!/usr/bin/env bash
# The whole suite against real PostgreSQL, Redis and Kafka (started here when not running).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/services.sh
npx tsc -p tsconfig.json --noEmit
npx vitest run "$@"
