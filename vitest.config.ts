import { defineConfig } from 'vitest/config';

const allTests = ['test/**/*.test.ts', 'providers/**/*.test.ts'];

// Fast tests: no database, no Redis, no sockets, no child processes. Everything else, and any test
// file not named here, is an integration test.
const unitTests = [
  'test/unit/**/*.test.ts',
  'test/fakes/kube-api/lifetimes.test.ts',
  'test/fakes/kube-api/parsers.test.ts',
  'providers/agent-sandbox/build-test-observe.test.ts',
  'providers/agent-sandbox/build-test-pods.test.ts',
  'providers/agent-sandbox/builders.test.ts',
  'providers/agent-sandbox/kube-errors.test.ts',
  'providers/agent-sandbox/names.test.ts',
  'providers/agent-sandbox/options.test.ts',
  'providers/sandbox-host/envelope.test.ts',
  'providers/simulated/fault-plan.test.ts',
];

// The chaos smoke test starts seven processes of its own; beside other tests it slows them past
// their limits, so it is a project of its own that npm test runs after the others, alone.
const chaosTests = ['test/chaos/chaos-smoke.test.ts'];

// The projects share one pool of two forked workers (vitest needs equal maxWorkers to run the
// projects side by side).
const shared = { testTimeout: 30_000, hookTimeout: 30_000, pool: 'forks', maxWorkers: 2 } as const;

export default defineConfig({
  test: {
    // Once per run, whichever projects run: reports the CRD tests skipped for want of the schemas,
    // and builds dist/ and the embedded database template for the tests that spawn the CLI.
    globalSetup: ['test/support/crd-notice.ts', 'test/support/prepared-once.ts'],
    projects: [
      {
        test: { name: 'unit', include: unitTests, ...shared },
      },
      {
        test: {
          name: 'integration',
          include: allTests,
          exclude: [...unitTests, ...chaosTests],
          ...shared,
        },
      },
      {
        test: { name: 'chaos', include: chaosTests, ...shared },
      },
    ],
  },
});
