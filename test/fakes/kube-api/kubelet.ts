// Stands in for the scheduler, the volume binder and the kubelet: each pass moves every live pod
// one stage (scheduled → image pulled, container waiting → running and Ready), binds pending PVCs,
// and lets deleted pods linger for the configured number of passes before they disappear.
import { createHash } from 'node:crypto';
import { findCondition, setCondition } from './conditions.ts';
import { claimNames } from './lifetimes.ts';
import { POD, PVC } from './resources.ts';
import type { ObjectStore } from './store.ts';
import { timestamp, type Condition, type JsonObject, type KubeObject } from './types.ts';

export interface KubeletSettings {
  podLingerSteps: number;
  nodeName: string;
  /** One IP for every Pod (default: 10.244.0.x, one per Pod). */
  podIp?: string;
}

interface Container {
  name: string;
  image?: string;
}

interface ContainerStatus extends JsonObject {
  name: string;
  state: JsonObject;
}

function containersOf(pod: KubeObject): Container[] {
  const containers = pod.spec?.['containers'];
  return Array.isArray(containers) ? (containers as Container[]) : [];
}

function imageId(image: string): string {
  const digest = createHash('sha256').update(image).digest('hex');
  return `${image.includes('/') ? image : `docker.io/library/${image}`}@sha256:${digest}`.replace(
    /:[^/@]*@/,
    '@',
  );
}

function podConditions(pod: KubeObject): Condition[] {
  const conditions = pod.status?.['conditions'];
  return Array.isArray(conditions) ? (conditions as Condition[]) : [];
}

function withConditions(
  pod: KubeObject,
  updates: [string, Condition['status'], string, string][],
): Condition[] {
  let conditions = podConditions(pod);
  for (const [type, status, reason, message] of updates) {
    conditions = setCondition(conditions, { type, status, reason, message });
  }
  return conditions;
}

export class FakeKubelet {
  private readonly lingering = new Map<string, number>();
  private nextIp = 10;

  constructor(
    private readonly store: ObjectStore,
    private readonly settings: KubeletSettings,
  ) {}

  /** One pass over every pod and PVC. Returns whether anything changed. */
  pass(): boolean {
    let changed = false;
    const pending = (c: Readonly<KubeObject>) =>
      c.status?.['phase'] === 'Pending' && !c.metadata.deletionTimestamp;
    for (const claim of this.store.all(PVC, undefined, pending)) {
      this.store.write(PVC, { ...claim, status: { ...claim.status, phase: 'Bound' } });
      changed = true;
    }
    for (const pod of this.store.all(POD)) changed = this.advance(pod) || changed;
    return changed;
  }

  private advance(pod: KubeObject): boolean {
    if (pod.metadata.deletionTimestamp) return this.terminate(pod);
    const phase = pod.status?.['phase'];
    if (phase === 'Succeeded' || phase === 'Failed') return false;
    if (typeof pod.spec?.['nodeName'] !== 'string') return this.schedule(pod);
    const statuses = pod.status?.['containerStatuses'] as ContainerStatus[] | undefined;
    if (!statuses) return this.pullImages(pod);
    if (statuses.some((s) => s.state['waiting'] !== undefined)) return this.start(pod, statuses);
    return false;
  }

  private schedule(pod: KubeObject): boolean {
    const missing = claimNames(pod).filter((name) => {
      const claim = this.store.read(PVC, pod.metadata.namespace, name);
      return !claim || claim.metadata.deletionTimestamp;
    });
    if (missing.length > 0) {
      const message = `0/1 nodes are available: persistentvolumeclaim "${missing[0]}" not found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.`;
      const current = findCondition(pod, 'PodScheduled');
      if (current?.status === 'False' && current.message === message) return false;
      const conditions = withConditions(pod, [['PodScheduled', 'False', 'Unschedulable', message]]);
      this.store.write(POD, { ...pod, status: { ...pod.status, conditions } });
      return true;
    }
    const conditions = withConditions(pod, [['PodScheduled', 'True', '', '']]);
    const spec = { ...pod.spec, nodeName: this.settings.nodeName };
    this.store.write(POD, { ...pod, spec, status: { ...pod.status, conditions } }, { keepGeneration: true });
    return true;
  }

  private pullImages(pod: KubeObject): boolean {
    const containerStatuses = containersOf(pod).map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: imageId(c.image ?? 'unknown'),
      ready: false,
      restartCount: 0,
      started: false,
      state: { waiting: { reason: 'ContainerCreating' } },
    }));
    const conditions = withConditions(pod, [
      ['Initialized', 'True', '', ''],
      ['Ready', 'False', 'ContainersNotReady', 'containers with unready status'],
      ['ContainersReady', 'False', 'ContainersNotReady', 'containers with unready status'],
    ]);
    const status = {
      ...pod.status,
      phase: 'Pending',
      conditions,
      containerStatuses,
      hostIP: '10.0.0.10',
      startTime: timestamp(),
    };
    this.store.write(POD, { ...pod, status });
    return true;
  }

  private start(pod: KubeObject, statuses: ContainerStatus[]): boolean {
    const startedAt = timestamp();
    const containerStatuses = statuses.map((s) => ({
      ...s,
      ready: true,
      started: true,
      state: { running: { startedAt } },
    }));
    const conditions = withConditions(pod, [
      ['Ready', 'True', '', ''],
      ['ContainersReady', 'True', '', ''],
    ]);
    const podIP = this.settings.podIp ?? `10.244.0.${this.nextIp}`;
    this.nextIp = this.nextIp >= 250 ? 10 : this.nextIp + 1;
    const status = {
      ...pod.status,
      phase: 'Running',
      conditions,
      containerStatuses,
      podIP,
      podIPs: [{ ip: podIP }],
    };
    this.store.write(POD, { ...pod, status });
    return true;
  }

  private terminate(pod: KubeObject): boolean {
    const left = (this.lingering.get(pod.metadata.uid) ?? this.settings.podLingerSteps) - 1;
    if (left > 0) {
      const firstSight = !this.lingering.has(pod.metadata.uid);
      this.lingering.set(pod.metadata.uid, left);
      if (!firstSight || findCondition(pod, 'Ready')?.status !== 'True') return true;
      const conditions = withConditions(pod, [['Ready', 'False', 'PodTerminating', 'pod is terminating']]);
      this.store.write(POD, { ...pod, status: { ...pod.status, conditions } });
      return true;
    }
    this.lingering.delete(pod.metadata.uid);
    if ((pod.metadata.finalizers ?? []).length > 0) return false;
    this.store.delete(POD, pod.metadata.namespace, pod.metadata.name);
    return true;
  }

  /** Makes a pod terminal now, as if its containers exited 0 (Succeeded) or 1 (Failed). */
  finish(namespace: string, name: string, phase: 'Succeeded' | 'Failed'): void {
    const pod = this.store.read(POD, namespace, name);
    if (!pod) throw new Error(`no pod ${namespace}/${name} to finish`);
    const finishedAt = timestamp();
    const containerStatuses = containersOf(pod).map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: imageId(c.image ?? 'unknown'),
      ready: false,
      restartCount: 0,
      started: false,
      state: {
        terminated: {
          exitCode: phase === 'Succeeded' ? 0 : 1,
          reason: phase === 'Succeeded' ? 'Completed' : 'Error',
          startedAt: finishedAt,
          finishedAt,
        },
      },
    }));
    const reason = phase === 'Succeeded' ? 'PodCompleted' : 'PodFailed';
    const conditions = withConditions(pod, [
      ['Ready', 'False', reason, ''],
      ['ContainersReady', 'False', reason, ''],
    ]);
    this.store.write(POD, { ...pod, status: { ...pod.status, phase, conditions, containerStatuses } });
  }
}
