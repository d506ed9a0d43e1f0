// The embedded AgentHost: a stand-in for the Host inside a simulated (or fake-cluster) sandbox. It
// completes its configuration handshake from the lease's own record once the sandbox started, as
// a real Host configured from its launch profile would; tests turn that off and configure a Host
// explicitly (or wrongly) to see readiness refuse. It opens no connection and sees no credential.
import type { Queryable } from '../store/db.ts';
import { readLeaseByOperation } from '../store/leases.ts';
import type { AgentHost, AgentHostReadiness, AgentHostTarget, LiveProbeResult } from './ports.ts';

type Configured = Extract<AgentHostReadiness, { configured: true }>;
/** What an explicit configuration may say differently from the lease (to test a wrong Host). */
export type HostConfiguration = Partial<Omit<Configured, 'configured'>>;

export interface EmbeddedAgentHostOptions {
  db: Queryable;
  /** Configure every Host as soon as its sandbox started (default true: embedded mode, the demo). */
  autoConfigure?: boolean;
}

export class EmbeddedAgentHost implements AgentHost {
  readonly #configured = new Map<string, HostConfiguration & { configuredAt: string }>();

  constructor(private readonly options: EmbeddedAgentHostOptions) {}

  /** Completes the handshake of the Host serving `operationId`, optionally for other bindings. */
  configure(operationId: string, configuration: HostConfiguration = {}): void {
    this.#configured.set(operationId, { configuredAt: new Date().toISOString(), ...configuration });
  }

  async readiness(target: AgentHostTarget, signal: AbortSignal): Promise<AgentHostReadiness> {
    signal.throwIfAborted();
    const lease = await readLeaseByOperation(this.options.db, target.operationId);
    if (lease?.resource?.phase !== 'started') {
      return { configured: false, reason: 'the Host has not started' };
    }
    const explicit = this.#configured.get(target.operationId);
    if (explicit === undefined && this.options.autoConfigure === false) {
      return { configured: false, reason: 'the Host has not completed its configuration handshake' };
    }
    return {
      configured: true,
      environmentId: lease.environmentId,
      operationId: lease.operationId,
      resourceGeneration: lease.resourceGeneration,
      podUid: lease.resource.placement['podUid'] ?? null,
      workspaceMountPath: lease.workspace.mountPath,
      networkPolicyGeneration: lease.networkPolicyGeneration,
      configuredAt: lease.updatedAt.toISOString(),
      ...explicit,
    };
  }

  probeLive(_endpoint: unknown, signal: AbortSignal): Promise<LiveProbeResult> {
    signal.throwIfAborted();
    return Promise.resolve({ live: true });
  }
}

/**
 * The AgentHost of a provider whose Hosts Sandlot cannot reach (Agent Sandbox without the
 * `service-backend-ca` trust root configured): nothing can say a Host was configured, so readiness
 * stays Unknown and no lease is ever ready. Never a stand-in that would vouch for a real Pod.
 */
export class UnreachableAgentHost implements AgentHost {
  constructor(private readonly reason: string) {}

  readiness(): Promise<AgentHostReadiness> {
    return Promise.reject(new Error(this.reason));
  }

  probeLive(): Promise<LiveProbeResult> {
    return Promise.resolve({ live: false, code: 'agenthost-unconfigured', message: this.reason });
  }
}
