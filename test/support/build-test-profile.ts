// An AcceptedBuildTestProfile document for tests (docs/build-test.md#configuration), and the same
// profile as the API and the workers use it once loaded.
import type { BuildTestProfileRef } from '../../actors/build-test/service.ts';
import { checkProfile } from '../../config/build-test-profile.ts';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';

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
