#!/usr/bin/env bash
# Runs the unit tests under other Node majors (default 22 and 24; Node 20 is what `npm test` runs on).
# Each Node comes from the npm registry's `node` package through `npm exec`, cached by npm after the
# first run, so no version manager and no root access are needed. Only the unit project runs: it needs
# no PostgreSQL or Redis, and it loads every module the machines, store and HTTP layers are built on.
#
#   scripts/node-matrix.sh [MAJOR ...]      e.g. scripts/node-matrix.sh 22 24   (npm run test:node-matrix)
set -euo pipefail
cd "$(dirname "$0")/.."

majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(22 24)

failed=()
for major in "${majors[@]}"; do
  started=$SECONDS
  # The `node` package's own `node` binary comes first on PATH inside `npm exec`; vitest's workers are
  # forked with the same binary (process.execPath).
  if npm exec --yes --package="node@$major" -- bash -c \
    'echo "== unit tests on Node $(node --version)" && node node_modules/vitest/vitest.mjs run --project unit'; then
    echo "== Node $major: passed in $((SECONDS - started)) s"
  else
    echo "== Node $major: FAILED after $((SECONDS - started)) s" >&2
    failed+=("$major")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "unit tests failed on Node ${failed[*]}" >&2
  exit 1
fi
