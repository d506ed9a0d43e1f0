#!/usr/bin/env bash
# The static checks `npm test` starts with: the type check and the linters (eslint, prettier, the
# layer rules) run side by side, one per core, each printing its own output when it ends. Fails if
# either fails, after both have finished, so one run shows every problem.
set -uo pipefail
cd "$(dirname "$0")/.."

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
{ npx tsc --noEmit && npx tsc --noEmit -p console; } >"$out/typecheck" 2>&1 &
typecheck=$!
npm run --silent lint >"$out/lint" 2>&1 &
lint=$!

status=0
wait "$typecheck" || status=1
echo "== typecheck: $([ $status -eq 0 ] && echo passed || echo FAILED)"
cat "$out/typecheck"
if wait "$lint"; then echo "== lint: passed"; else echo "== lint: FAILED"; status=1; fi
cat "$out/lint"
exit $status
