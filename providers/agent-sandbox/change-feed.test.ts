// The Agent Sandbox change feed against the fake Kubernetes API's watch (real HTTPS): a Sandbox
// controlled by a SandboxClaim is reported as that claim's resource when it finishes at its
// generation or is deleted, once per finish; one already finished at start is reported; a watch the
// server ends (timeoutSeconds) or expires (410) is resumed, and nothing is missed across it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeKubeApi, type FakeKubeApi } from '../../test/fakes/kube-api/index.ts';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { NAMESPACE, kubeConfigOf } from '../../test/support/fake-cluster-harness.ts';
import { changedResource, sandboxChangeFeed } from './change-feed.ts';
import type { KubeObject } from './kube-object.ts';

const SANDBOX = { apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox' };

const sandbox = (name: string, uid: string, finished?: 'PodSucceeded' | 'PodFailed'): KubeObject => ({
  ...SANDBOX,
  metadata: {
    name,
    namespace: NAMESPACE,
    generation: 1,
    ownerReferences: [
      {
        apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
        kind: 'SandboxClaim',
        name,
        uid,
        controller: true,
      },
    ],
  },
  status:
    finished === undefined
      ? {}
      : { conditions: [{ type: 'Finished', status: 'True', reason: finished, observedGeneration: 1 }] },
});

describe('changedResource', () => {
  it('names the controlling claim of a finished, deleting or deleted Sandbox, and nothing else', () => {
    expect(changedResource('MODIFIED', sandbox('a', 'u-a', 'PodSucceeded'))).toBe('a/u-a');
    expect(changedResource('MODIFIED', sandbox('a', 'u-a'))).toBeUndefined();
    expect(changedResource('DELETED', sandbox('a', 'u-a'))).toBe('a/u-a');
    const deleting = sandbox('a', 'u-a');
    deleting.metadata!.deletionTimestamp = new Date().toISOString();
    expect(changedResource('MODIFIED', deleting)).toBe('a/u-a');
    // Finished at an older generation says nothing about this one.
    const stale = sandbox('a', 'u-a', 'PodFailed');
    stale.metadata!.generation = 2;
    expect(changedResource('MODIFIED', stale)).toBeUndefined();
    // Not controlled by a SandboxClaim: not ours to report.
    const loose = sandbox('a', 'u-a', 'PodSucceeded');
    loose.metadata!.ownerReferences = [];
    expect(changedResource('MODIFIED', loose)).toBeUndefined();
  });
});

describe.skipIf(skipWithoutCrds)('sandboxChangeFeed against the fake Kubernetes API', () => {
  let fake: FakeKubeApi;
  const controller = new AbortController();
  const seen: string[] = [];
  const errors: unknown[] = [];
  let following: Promise<void>;

  const until = async (what: string, probe: () => boolean, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!probe()) {
      if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const count = (id: string) => seen.filter((s) => s === id).length;

  beforeAll(async () => {
    // Paused: no controller rewrites the planted Sandboxes' status.
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { paused: true } });
    fake.objects.put(sandbox('done-early', 'u-0', 'PodSucceeded') as never);
    fake.objects.put(sandbox('running', 'u-1') as never);
    // The server ends each watch after a second: the feed must resume it.
    const feed = sandboxChangeFeed(kubeConfigOf(fake), NAMESPACE, {
      timeoutSeconds: 1,
      retryMs: 50,
      maxRetryMs: 200,
    });
    following = feed.followChanges((ids) => seen.push(...ids), {
      signal: controller.signal,
      onError: (error) => errors.push(error),
    });
  });
  afterAll(async () => {
    controller.abort();
    await following;
    await fake?.close();
  });

  it('reports a Sandbox already finished when it starts', async () => {
    await until('the early finish reported', () => count('done-early/u-0') === 1);
    expect(count('running/u-1')).toBe(0);
  });

  it('reports a finish once, however often the finished Sandbox changes, and its deletion', async () => {
    const ref = { ...SANDBOX, namespace: NAMESPACE, name: 'running' };
    fake.objects.mutate(ref, (s) => {
      (s as KubeObject).status = {
        conditions: [{ type: 'Finished', status: 'True', reason: 'PodFailed', observedGeneration: 1 }],
      };
    });
    await until('the finish reported', () => count('running/u-1') === 1);
    fake.objects.mutate(ref, (s) => {
      (s as KubeObject).metadata!.annotations = { touched: 'yes' };
    });
    fake.objects.remove(ref);
    await until('the deletion reported', () => count('running/u-1') === 2);
  });

  it('resumes after the server ends the watch, missing nothing meanwhile', async () => {
    const watches = () => fake.requests.filter((r) => r.verb === 'watch').length;
    const before = watches();
    await until('the watch resumed twice', () => watches() >= before + 2, 20_000);
    fake.objects.put(sandbox('later', 'u-2', 'PodSucceeded') as never);
    await until('a finish after the resumption reported', () => count('later/u-2') === 1);
    // Resuming from the last version seen replays nothing already reported.
    expect(count('done-early/u-0')).toBe(1);
    expect(errors).toEqual([]);
  }, 30_000);
});
