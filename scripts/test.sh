#!/usr/bin/env bash
# The whole suite against real PostgreSQL, Redis and Kafka (started here when not running).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/services.sh
npx tsc -p tsconfig.json --noEmit
results="$(mktemp)"
rc=0
npx vitest run --reporter=default --reporter=json --outputFile="$results" "$@" || rc=$?
# A plain closing line that any CI can read: passed, failed (an errored file counts), skipped, errored files.
node scripts/test-summary.mjs "$results" "$rc" || true
rm -f "$results"
exit "$rc"
