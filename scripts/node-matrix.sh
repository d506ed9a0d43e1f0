#!/usr/bin/env bash
# Runs the unit tests under other Node majors (default 22 and 24; Node 20 is what `npm test` runs on).
# Each Node comes from the npm registry's `node` package through `npm exec`, cached by npm after the
# first run, so no version manager and no root access are needed. Only the unit project runs: it needs
# no PostgreSQL or Redis, and it loads every module the machines, store and HTTP layers are built on.
# The majors run side by side (most of each run is fetching Node and vitest importing, not the tests),
# each printing its own output when it ends, in the order given; fails if any fails.
#
#   scripts/node-matrix.sh [MAJOR ...]      e.g. scripts/node-matrix.sh 22 24   (npm run test:node-matrix)
set -uo pipefail
cd "$(dirname "$0")/.."

majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(22 24)

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
started=$SECONDS
pids=()
for major in "${majors[@]}"; do
  # The `node` package's own `node` binary comes first on PATH inside `npm exec`; vitest's workers are
  # forked with the same binary (process.execPath). One worker each: the majors share the two cores.
  (
    begun=$SECONDS
    if npm exec --yes --package="node@$major" -- bash -c \
      'echo "== unit tests on Node $(node --version)" && node node_modules/vitest/vitest.mjs run --project unit --maxWorkers=1'; then
      echo "== Node $major: passed in $((SECONDS - begun)) s"
    else
      echo "== Node $major: FAILED after $((SECONDS - begun)) s"
      exit 1
    fi
  ) >"$out/$major" 2>&1 &
  pids+=($!)
done

failed=()
for i in "${!majors[@]}"; do
  wait "${pids[$i]}" || failed+=("${majors[$i]}")
  cat "$out/${majors[$i]}"
done
echo "== Node ${majors[*]}: $((SECONDS - started)) s in all"
if [ ${#failed[@]} -gt 0 ]; then
  echo "unit tests failed on Node ${failed[*]}" >&2
  exit 1
fi
