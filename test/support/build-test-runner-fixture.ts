// A BuildTest runner's inputs for provider-level tests: a profile snapshot, and a fresh operation on
// a fresh lease the provider under test provisioned, version 1 or 2, with the given declared outputs.
import { randomBytes } from 'node:crypto';
import type {
  AcceptedCommandSpec,
  BuildTestBinding,
  BuildTestPlacement,
  BuildTestProfileSnapshot,
  CommandPodRequest,
} from '../../providers/build-test.ts';
import type { SandboxProvider } from '../../providers/provider.ts';
import { budget, newOwner, provisionRequest } from '../contract/contract-subject.ts';
import { sha256 } from './build-test-commands.ts';

export const runnerProfile: BuildTestProfileSnapshot = {
  hash: 'a'.repeat(64),
  images: {
    command: `registry.invalid/build@sha256:${'1'.repeat(64)}`,
    collector: `registry.invalid/agenthost@sha256:${'2'.repeat(64)}`,
  },
  resources: {
    command: { cpu: '1', memory: '1Gi', ephemeralStorage: '1Gi' },
    collector: { cpu: '500m', memory: '512Mi', ephemeralStorage: '1Gi' },
    commandTimeoutSeconds: 600,
    collectorTimeoutSeconds: 60,
    maxLogBytes: 4096,
  },
  egress: 'deny-all',
  collector: { executable: '/usr/local/bin/agenthost', args: ['--build-test-output-collector-v1'] },
};

export interface RunnerOperation {
  binding: BuildTestBinding;
  placement: BuildTestPlacement;
  command: AcceptedCommandSpec;
  request: CommandPodRequest;
}

/**
 * A fresh operation on a fresh lease. The accepted source is `seed`'s; `sent` is the bytes handed
 * to the provider (default the seed itself: pass other bytes to test a refusal).
 */
export async function runnerOperation(
  provider: SandboxProvider,
  version: 1 | 2,
  outputs: string[],
  seed: { bytes: Uint8Array; baseSha: string },
  sent: Uint8Array = seed.bytes,
): Promise<RunnerOperation> {
  const owner = newOwner();
  const provision = provisionRequest({ provider }, owner);
  const lease = await provider.provision(provision, budget());
  const id = randomBytes(5).toString('hex');
  const binding: BuildTestBinding = {
    operationId: `bt-op-${id}`,
    checkpoint: {
      tenantId: owner.tenantId,
      projectId: 'p',
      runId: owner.runId,
      stepId: 's',
      checkpointId: `cp-${id}`,
    },
    requestFingerprint: sha256(Buffer.from(`request ${id}`)),
    acceptedCommandHash: sha256(Buffer.from(`command ${id}`)),
  };
  const placement: BuildTestPlacement = {
    lease: { owner, resourceId: lease.resourceId, options: provision.options },
    workspace: provision.workspace,
    networkPolicyGeneration: 1,
  };
  const command: AcceptedCommandSpec = {
    version,
    executable: '/usr/bin/make',
    args: ['build'],
    workingDirectory: '.',
    environment: { CI: '1' },
    timeoutSeconds: 600,
    outputs,
    source:
      version === 2
        ? { seedSha256: sha256(seed.bytes), seedLength: seed.bytes.length, baseSha: seed.baseSha }
        : null,
  };
  const request = {
    binding,
    placement,
    profile: runnerProfile,
    command,
    seed: version === 2 ? sent : null,
  };
  return { binding, placement, command, request };
}
