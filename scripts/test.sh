#!/usr/bin/env bash
# The whole suite against real PostgreSQL, Redis and Kafka (started here when not running).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/services.sh
npx tsc -p tsconfig.json --noEmit
results="$(mktemp)"
rc=0
npx vitest run --reporter=default --reporter=json --outputFile="$results" "$@" || rc=$?
# A plain closing line that any CI can read.
node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed`)' "$results" || true
rm -f "$results"
exit "$rc"
