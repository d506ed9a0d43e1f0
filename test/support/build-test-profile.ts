// An AcceptedBuildTestProfile document for tests (docs/build-test.md#configuration), and the same
// profile as the API and the workers use it once loaded.
import type { BuildTestProfileRef } from '../../actors/build-test/service.ts';
import { checkProfile } from '../../config/build-test-profile.ts';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { buildTestWorkerFor } from '../../cli/compose.ts';
import type { Core } from '../../actors/ports.ts';
import type { BuildTestRunner } from '../../providers/build-test.ts';
import type { BuildTestWorkerDeps } from '../../workers/build-test-step.ts';

export function profileDocument(executables = ['/usr/bin/make', '/usr/bin/npm'], versions = ['v1', 'v2']) {
  return {
    executables,
    versions,
    images: {
      command: `registry.example.com/build/runner@sha256:${'a'.repeat(64)}`,
      collector: `registry.example.com/sandlot/agenthost@sha256:${'b'.repeat(64)}`,
    },
    resources: {
      command: { cpu: '2', memory: '4Gi', ephemeralStorage: '8Gi' },
      collector: { cpu: '500m', memory: '512Mi', ephemeralStorage: '1Gi' },
      commandTimeoutSeconds: 3600,
      collectorTimeoutSeconds: 600,
      maxLogBytes: 1048576,
    },
    egress: 'deny-all',
    collector: { executable: '/usr/local/bin/agenthost', args: ['--build-test-output-collector-v1'] },
  };
}

/** The profile checked and hashed as config/build-test-profile.ts loads it. */
export function loadedProfile(document: unknown = profileDocument()): BuildTestProfileRef {
  const checked = checkProfile(document);
  if (!('profile' in checked)) throw new Error(checked.problems.join('; '));
  return { ...checked.profile, hash: sha256Hex(canonicalJson(checked.profile)) };
}

/**
 * The workers' side of an embedded BuildTest offer, as cli/compose.ts builds it (a worker asks the
 * stand-in Core as `sandlot-worker` of the tenant), looking at a running Pod every 50 ms.
 */
export function embeddedWorker(runner: BuildTestRunner, core: Core): BuildTestWorkerDeps {
  const worker = buildTestWorkerFor(
    { profile: loadedProfile(), core, runner },
    { mode: 'embedded' },
  ).buildTest;
  if (worker === undefined) throw new Error('an offer with a runner has a worker side');
  return { ...worker, pollMs: 50 };
}
