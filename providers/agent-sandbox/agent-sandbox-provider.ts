// The SandboxProvider over Kubernetes Agent Sandbox (extensions.agents.x-k8s.io/v1beta1). Every call
// first checks its budget, parses the lease's options snapshot, and compares the snapshot's cluster
// pin with the live cluster's, refusing before any request when they differ; all reads and writes
// then follow the snapshot (namespace, image, runtime class…), never this process's current settings.
import type { KubeConfig } from './client-node.ts';
import { definitive, ProviderError, uncertain } from '../errors.ts';
import type {
  CallOptions,
  DescribeResult,
  InventoryEntry,
  OwnedQuery,
  ProviderChangeFeed,
  ProviderIdentity,
  ProviderInventory,
  ProviderOptionsSnapshot,
  ProviderResource,
  ProvisionRequest,
  ReleaseReceipt,
  ReleaseRequest,
  RenewReceipt,
  RenewRequest,
  ResourceRef,
  SandboxProvider,
  UncertainCall,
} from '../provider.ts';
import { agentSandboxIdentity } from './identity.ts';
import { defaultWatchSettings, sandboxChangeFeed, type WatchSettings } from './change-feed.ts';
import { clusterPinOf, livePinOf, shortPin } from './cluster-pin.ts';
import { KubeClient } from './kube-client.ts';
import { budget } from './kube-errors.ts';
import { describe, inventory, listOwned } from './list-owned.ts';
import type { AdapterContext } from './observe.ts';
import { parseSnapshot, snapshotOf, type AgentSandboxSnapshot } from './options-snapshot.ts';
import type { AgentSandboxOptions } from './options.ts';
import { provision } from './provision.ts';
import { release } from './release.ts';
import { renew } from './renew.ts';

export interface AgentSandboxProviderDeps {
  options: AgentSandboxOptions;
  /** Must select an https:// cluster with a CA to pin; checked (and pinned) at construction. */
  kubeConfig: KubeConfig;
  /** The change feed's watch timing (default change-feed.ts defaultWatchSettings). */
  watch?: Partial<WatchSettings>;
}

type Operation = 'provision' | 'describe' | 'listOwned' | 'renew' | 'release' | 'inventory';

export class AgentSandboxProvider implements SandboxProvider, ProviderInventory, ProviderChangeFeed {
  readonly identity: ProviderIdentity;
  private readonly kubeConfig: KubeConfig;
  private readonly kube: KubeClient;
  private readonly snapshot: AgentSandboxSnapshot;
  private readonly requestTimeoutMs: number;
  private readonly watchSettings: WatchSettings;

  constructor(deps: AgentSandboxProviderDeps) {
    this.watchSettings = { ...defaultWatchSettings, ...deps.watch };
    this.identity = agentSandboxIdentity(deps.options.optionsRevision);
    this.kubeConfig = deps.kubeConfig;
    // Throws ClusterTrustError for http://, insecure-skip-tls-verify or no CA: refused at start-up.
    this.snapshot = snapshotOf(deps.options, clusterPinOf(deps.kubeConfig));
    this.kube = new KubeClient(deps.kubeConfig);
    this.requestTimeoutMs = deps.options.apiServerRequestTimeoutSeconds * 1000;
  }

  /**
   * Our client stops sending at the call's deadline, and the API server acts on a request at most
   * its request timeout after it arrived: past both, nothing that call sent can still be applied.
   */
  callSettled(call: UncertainCall, listedAt: Date): Promise<boolean> {
    return Promise.resolve(listedAt.getTime() >= call.deadline.getTime() + this.requestTimeoutMs);
  }

  optionsSnapshot(): ProviderOptionsSnapshot {
    return { ...this.snapshot };
  }

  /**
   * A watch over the Sandboxes of the configured namespace (change-feed.ts). A lease recorded
   * under another namespace is reached by the observer's resync pass only.
   */
  followChanges(
    onChange: (resourceIds: string[]) => void,
    options: { signal: AbortSignal; onError?: (error: unknown) => void },
  ): Promise<void> {
    return sandboxChangeFeed(this.kubeConfig, this.snapshot.namespace, this.watchSettings).followChanges(
      onChange,
      options,
    );
  }

  provision(request: ProvisionRequest, options: CallOptions): Promise<ProviderResource> {
    return this.call('provision', request.options, options, (context) =>
      provision(context, request, options),
    );
  }

  describe(ref: ResourceRef, options: CallOptions): Promise<DescribeResult> {
    return this.call('describe', ref.options, options, (context) => describe(context, ref, options));
  }

  listOwned(query: OwnedQuery, options: CallOptions): Promise<ProviderResource[]> {
    return this.call('listOwned', query.options, options, (context) => listOwned(context, query, options));
  }

  /** Every SandboxClaim with Sandlot's owner labels in the configured namespace (`sandlot audit`). */
  inventory(options: CallOptions): Promise<InventoryEntry[]> {
    return this.call('inventory', this.snapshot, options, (context) => inventory(context, options));
  }

  renew(request: RenewRequest, options: CallOptions): Promise<RenewReceipt> {
    return this.call('renew', request.options, options, (context) => renew(context, request, options));
  }

  release(request: ReleaseRequest, options: CallOptions): Promise<ReleaseReceipt> {
    return this.call('release', request.options, options, (context) => release(context, request, options));
  }

  private async call<T>(
    operation: Operation,
    snapshot: ProviderOptionsSnapshot,
    options: CallOptions,
    run: (context: AdapterContext) => Promise<T>,
  ): Promise<T> {
    let result: T;
    try {
      budget.check(options, operation);
      const context = { kube: this.kube, snapshot: this.pinned(snapshot) };
      result = await run(context);
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      throw uncertain('adapter-error', `Agent Sandbox ${operation} failed unexpectedly`, error);
    }
    // An answer that arrives after the caller gave up is not one it can rely on.
    budget.check(options, operation);
    return result;
  }

  /** The lease's snapshot, once its cluster pin matches the live cluster's (before any request). */
  private pinned(raw: ProviderOptionsSnapshot): AgentSandboxSnapshot {
    const snapshot = parseSnapshot(raw);
    const live = livePinOf(this.kubeConfig);
    if (live !== snapshot.clusterPin) {
      throw definitive(
        'cluster-pin-mismatch',
        `The lease's objects live in cluster ${shortPin(snapshot.clusterPin)}, ` +
          `but this process talks to cluster ${shortPin(live)}; refusing to act on another cluster`,
      );
    }
    return snapshot;
  }
}
