// The reconcile loop standing in for kube-controller-manager's garbage collector, the scheduler and
// kubelet, and agent-sandbox's Sandbox and SandboxClaim controllers. One pass (`step`) runs each of
// them once over every object; a timer runs passes every `intervalMs` unless paused.
import type { KubeApi } from './api-server.ts';
import { reconcileClaim, type ClaimSettings } from './claim-reconciler.ts';
import type { Deleter } from './deletion.ts';
import { KubeError } from './errors.ts';
import { FakeKubelet } from './kubelet.ts';
import { SANDBOX, SANDBOX_CLAIM } from './resources.ts';
import { reconcileSandbox, type ReconcileContext } from './sandbox-reconciler.ts';
import type { ObjectStore } from './store.ts';

export interface ControllerOptions {
  /** Milliseconds between automatic passes (default 20). */
  intervalMs?: number;
  /** Start paused: only `step()`/`settle()` advance the cluster (default false). */
  paused?: boolean;
  /** Passes a deleted, scheduled Pod stays visible with a deletionTimestamp (default 0). */
  podLingerSteps?: number;
  /** Label domains SandboxClaim additionalPodMetadata labels may use (default ['sandbox.users.io']). */
  allowedLabelDomains?: string[];
  /** Cluster DNS domain used in Sandbox serviceFQDN (default cluster.local). */
  clusterDomain?: string;
  /** Node pods are bound to (default fake-node-1). */
  nodeName?: string;
  /**
   * The IP every Pod gets (default: 10.244.0.x, one per Pod, that nothing answers on). A harness
   * that serves the Pods' AgentHost on a loopback address gives that address here.
   */
  podIp?: string;
}

export interface FakeController {
  /** One reconcile pass: garbage collector, scheduler/kubelet, Sandbox controller, claim controller. */
  step(): Promise<void>;
  /** Runs passes until one changes nothing; throws if that takes more than `maxSteps` (default 100). */
  settle(maxSteps?: number): Promise<void>;
  pause(): void;
  resume(): void;
  /** Makes a Pod terminal now; the Sandbox reports Finished on the next pass. */
  finishPod(name: string, phase: 'Succeeded' | 'Failed', namespace?: string): void;
  /** Passes run so far. */
  readonly steps: number;
}

export interface ControllerDeps {
  store: ObjectStore;
  api: KubeApi;
  deleter: Deleter;
  defaultNamespace: string;
}

/**
 * An API error while reconciling one object (say a planted object its status write cannot validate)
 * is that object's problem, retried next pass, as a real controller would; anything else is a bug.
 */
function isolate(reconcile: () => void): void {
  try {
    reconcile();
  } catch (error) {
    if (!(error instanceof KubeError)) throw error;
  }
}

export class LoopController implements FakeController {
  private timer: NodeJS.Timeout | undefined;
  private passes = 0;
  /** A pass run by the timer that threw; reported by the next explicit step or settle. */
  private failure: unknown;
  private readonly kubelet: FakeKubelet;
  private readonly context: ReconcileContext;
  private readonly claims: ClaimSettings;

  constructor(
    private readonly deps: ControllerDeps,
    private readonly options: ControllerOptions,
  ) {
    this.kubelet = new FakeKubelet(deps.store, {
      podLingerSteps: options.podLingerSteps ?? 0,
      nodeName: options.nodeName ?? 'fake-node-1',
      ...(options.podIp === undefined ? {} : { podIp: options.podIp }),
    });
    this.context = { ...deps, clusterDomain: options.clusterDomain ?? 'cluster.local' };
    this.claims = { allowedLabelDomains: options.allowedLabelDomains ?? ['sandbox.users.io'] };
    if (!options.paused) this.resume();
  }

  get steps(): number {
    return this.passes;
  }

  /** Runs one pass synchronously; returns whether it changed anything. */
  private pass(): boolean {
    this.passes += 1;
    const { store } = this.deps;
    const before = store.revision;
    const collected = this.deps.deleter.collect();
    const kubeletBusy = this.kubelet.pass();
    for (const sandbox of store.all(SANDBOX)) isolate(() => reconcileSandbox(this.context, sandbox));
    for (const claim of store.all(SANDBOX_CLAIM))
      isolate(() => reconcileClaim(this.context, claim, this.claims));
    return collected || kubeletBusy || store.revision !== before;
  }

  private rethrow(): void {
    const failure = this.failure;
    this.failure = undefined;
    if (failure !== undefined) throw new Error('a timed controller pass failed', { cause: failure });
  }

  step(): Promise<void> {
    try {
      this.rethrow();
      this.pass();
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(
        error instanceof Error ? error : new Error('controller pass failed', { cause: error }),
      );
    }
  }

  async settle(maxSteps = 100): Promise<void> {
    this.rethrow();
    for (let i = 0; i < maxSteps; i += 1) {
      if (!this.pass()) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error(`the fake cluster did not settle within ${maxSteps} steps`);
  }

  pause(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  resume(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      try {
        this.pass();
      } catch (error) {
        this.failure = error;
      }
    }, this.options.intervalMs ?? 20);
    this.timer.unref();
  }

  finishPod(name: string, phase: 'Succeeded' | 'Failed', namespace = this.deps.defaultNamespace): void {
    this.kubelet.finish(namespace, name, phase);
  }
}
