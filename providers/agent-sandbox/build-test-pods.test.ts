// The BuildTest Pods and policy as built (no cluster): deterministic DNS-safe names, offline and
// unselectable by the project's Cilium policy, the helper's state kept from the command, the
// Workspace read-only for the collector; and the receipts refused field by field.
import { describe, expect, it } from 'vitest';
import { newOwner } from '../../test/contract/contract-subject.ts';
import type { AcceptedCommandSpec, BuildTestProfileSnapshot } from '../build-test.ts';
import { buildTestPodName, operationLabelOf, repositoryPathOf } from './build-test-names.ts';
import {
  buildCollectorPod,
  buildCommandPod,
  buildDenyAllPolicy,
  commandRequest,
  type PodPlan,
} from './build-test-pods.ts';
import { checkCollectorAnswer, checkPreparation } from './build-test-receipts.ts';
import { isDnsLabel, isLabelValue, LABELS } from './names.ts';

const hex = (c: string) => c.repeat(64);
const profile: BuildTestProfileSnapshot = {
  hash: hex('a'),
  images: { command: `r.invalid/build@sha256:${hex('1')}`, collector: `r.invalid/host@sha256:${hex('2')}` },
  resources: {
    command: { cpu: '2', memory: '4Gi', ephemeralStorage: '8Gi' },
    collector: { cpu: '500m', memory: '512Mi', ephemeralStorage: '1Gi' },
    commandTimeoutSeconds: 3600,
    collectorTimeoutSeconds: 600,
    maxLogBytes: 1024,
  },
  egress: 'deny-all',
  collector: { executable: '/usr/local/bin/agenthost', args: ['--build-test-output-collector-v1'] },
};
const plan: PodPlan = {
  binding: {
    operationId: 'Op_With.Odd-Characters/and a very long tail '.repeat(4),
    checkpoint: { tenantId: 't', projectId: 'p', runId: 'r', stepId: 's', checkpointId: 'cp-1' },
    requestFingerprint: hex('f'),
    acceptedCommandHash: hex('c'),
  },
  owner: newOwner(),
  leaseResourceId: 'sl-x/uid-1',
  namespace: 'sandlot',
  runtimeClassName: 'kata',
  profile,
  workspace: {
    pvcName: 'vol-1',
    pvcUid: 'pvc-uid',
    resourceGeneration: 1,
    dataGeneration: 1,
    mountPath: '/workspace',
    readOnly: false,
  },
};
const command: AcceptedCommandSpec = {
  version: 2,
  executable: '/usr/bin/make',
  args: ['build'],
  workingDirectory: 'app',
  environment: { CI: '1' },
  timeoutSeconds: 900,
  outputs: ['dist/a'],
  source: { seedSha256: hex('e'), seedLength: 10, baseSha: 'b'.repeat(40) },
};

describe('BuildTest Pods', () => {
  it('names every object from the operation ID alone, as DNS labels', () => {
    const name = buildTestPodName(plan.binding.operationId, 'command');
    expect(name).toBe(buildTestPodName(plan.binding.operationId, 'command'));
    expect(isDnsLabel(name)).toBe(true);
    expect(isDnsLabel(`${buildTestPodName(plan.binding.operationId, 'collector')}-offline`)).toBe(true);
    expect(isLabelValue(operationLabelOf(plan.binding.operationId))).toBe(true);
  });

  it('keeps the command from the helper state and off the project network policy', () => {
    const pod = buildCommandPod(plan, command);
    const spec = pod.spec!;
    expect(pod.metadata?.labels).not.toHaveProperty(LABELS.projectHash);
    expect(pod.metadata?.labels).not.toHaveProperty(LABELS.networkPolicyGeneration);
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.restartPolicy).toBe('Never');
    const [main] = spec.containers;
    expect(main?.volumeMounts?.map((m) => m.name)).toEqual(['workspace']);
    expect(main?.command).toEqual(['/usr/bin/make']);
    expect(main?.workingDir).toBe(`${repositoryPathOf('/workspace', plan.binding.operationId)}/app`);
    expect(main?.env).toEqual([{ name: 'CI', value: '1' }]);
    expect(spec.initContainers?.[0]).toMatchObject({ name: 'preparation', restartPolicy: 'Always' });
  });

  it('mounts the Workspace read-only in the collector and denies all traffic', () => {
    const pod = buildCollectorPod(plan, { ...commandRequest(plan, command), commandPodUid: 'u' });
    expect(pod.spec?.containers[0]?.volumeMounts?.find((m) => m.name === 'workspace')?.readOnly).toBe(true);
    expect(pod.spec?.volumes?.find((v) => v.name === 'workspace')?.persistentVolumeClaim?.readOnly).toBe(
      true,
    );
    expect(buildDenyAllPolicy(plan, 'collector').spec).toEqual({
      podSelector: {
        matchLabels: {
          'sandlot.dev/build-test-operation': operationLabelOf(plan.binding.operationId),
          'sandlot.dev/build-test-role': 'collector',
        },
      },
      policyTypes: ['Ingress', 'Egress'],
    });
  });
});

describe('BuildTest receipts', () => {
  const request = commandRequest(plan, command);
  const receipt = {
    operationId: request.operationId,
    checkpointId: 'cp-1',
    sourceSha256: hex('e'),
    path: request.repositoryPath,
    podUid: 'pod-1',
  };
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));

  it.each([
    ['operationId', 'other'],
    ['checkpointId', 'cp-2'],
    ['sourceSha256', hex('0')],
    ['path', '/workspace/other'],
    ['podUid', 'pod-2'],
  ])('refuses a preparation receipt with another %s', (field, value) => {
    expect(checkPreparation(json({ ...receipt, [field]: value }), request, 'pod-1')).toEqual({
      refused: `the preparation receipt does not match (${field})`,
    });
  });

  it('accepts the exact preparation receipt and refuses unreadable answers', () => {
    expect(checkPreparation(json(receipt), request, 'pod-1')).toEqual({ receipt });
    expect(checkPreparation(Buffer.from('nope'), request, 'pod-1')).toHaveProperty('refused');
  });

  it('fails a collector receipt bound to another Pod or missing a declared output', () => {
    const sealed = {
      podUid: 'col-1',
      container: 'collector',
      operationId: request.operationId,
      checkpointId: 'cp-1',
      requestFingerprint: hex('f'),
      version: 2,
      outputs: [{ path: 'dist/a', size: 1, sha256: hex('d') }],
      capture: { sha256: hex('9'), length: 40 },
    };
    const answer = (r: unknown) => json({ state: 'sealed', receipt: r });
    expect(checkCollectorAnswer(answer(sealed), request, 'col-1')).toMatchObject({ state: 'sealed' });
    expect(checkCollectorAnswer(answer(sealed), request, 'col-2')).toMatchObject({
      reason: 'invalid-receipt',
    });
    expect(checkCollectorAnswer(answer({ ...sealed, outputs: [] }), request, 'col-1')).toMatchObject({
      reason: 'invalid-receipt',
    });
    expect(checkCollectorAnswer(answer({ ...sealed, capture: null }), request, 'col-1')).toMatchObject({
      reason: 'invalid-receipt',
    });
  });
});
