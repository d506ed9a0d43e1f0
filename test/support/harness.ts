// Builds the real application over a real database, with an HS256 verifier and a helper to mint
// tokens, so HTTP tests go through exactly the code `sandlot serve` runs.
import { randomBytes } from 'node:crypto';
import type {
  AgentHost,
  RuntimeCore,
  NetworkPolicyVerifier,
  ProjectsAuthority,
  RunSelectionSource,
  WorkspaceStorage,
} from '../../actors/ports.ts';
import type { RuntimeEvents } from '../../actors/runtime-events/ports.ts';
import type { NetworkPolicyWriter } from '../../actors/sandbox/network-policy-writer.ts';
import type { ActorRuntime } from '../../actors/runtime.ts';
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import { createEnvironmentRuntime, createServices, type Services } from '../../actors/services.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import { mintDevToken } from '../../http/auth/mint.ts';
import { createTokenVerifier, type TokenVerifierOptions } from '../../http/auth/verify.ts';
import { createApp } from '../../http/app.ts';
import { createLogger } from '../../lib/logger.ts';
import type { SandboxProvider } from '../../providers/provider.ts';
import {
  SimulatedProvider,
  type SimulatedProviderOptions,
} from '../../providers/simulated/simulated-provider.ts';
import { migrateSimulated } from '../../providers/simulated/migrate.ts';
import { attemptRunner } from '../../workers/effect-processor.ts';
import { runnerDeps, startWorkers, type WorkerHost, type WorkerSettings } from '../../workers/host.ts';
import type { BuildTestWorkerDeps } from '../../workers/build-test-step.ts';
import type { BuildTestOffer } from '../../actors/build-test/service.ts';
import type { Database } from '../../store/db.ts';
import { GrantsAuthority } from '../../store/grants.ts';
import { migrate } from '../../store/migrate.ts';
import { TableNetworkPolicies } from '../../store/network-policies.ts';
import { TableRunSelections } from '../../store/run-selections.ts';

export const issuer = 'sandlot-test';
export const audience = 'sandlot';

export interface Harness {
  db: Database;
  runtime: ActorRuntime<EnvironmentEvent>;
  services: Services;
  provider: SimulatedProvider;
  /** The verifier admission and the workers' dispatch check use. */
  networkPolicies: NetworkPolicyVerifier;
  /** The authority and selection source admission and the workers' result commits use. */
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
  workers: WorkerHost | null;
  /** The app's fetch handler, for tests that serve it over a real socket. */
  fetch: (request: Request, env?: unknown) => Response | Promise<Response>;
  close(): Promise<void>;
  request(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; contentType?: string },
  ): Promise<Response>;
  token(
    tenant: string,
    subject: string,
    options?: {
      operator?: boolean;
      ttlSeconds?: number;
      audience?: string;
      runBinding?: { projectId: string; runId: string };
    },
  ): Promise<string>;
}

export interface HarnessOptions {
  key?: Uint8Array;
  /** The caller already migrated: the core set, and migrateSimulated too if the test provisions. */
  migrated?: boolean;
  provider?: Omit<SimulatedProviderOptions, 'db' | 'optionsRevision'>;
  /** Run effects against this provider (e.g. the Agent Sandbox adapter on the fake API) instead. */
  sandboxProvider?: SandboxProvider;
  /** Verify network policies with this (e.g. the Cilium verifier on the fake API); default the table. */
  networkPolicies?: NetworkPolicyVerifier;
  /** Read Workspace storage back with this (e.g. PVC and PV on the fake API); default the embedded table. */
  workspaceStorage?: WorkspaceStorage;
  /** Ask this Projects authority (e.g. one that can be held) instead of the grants table. */
  authority?: ProjectsAuthority;
  /** Read run selections from this (e.g. the HTTP client on a fake service); default the table. */
  selections?: RunSelectionSource;
  /**
   * Production mode: verify tokens this way (e.g. JWKS) and mount no admin routes. `token()` then
   * cannot mint tokens; the caller signs its own. Default: embedded mode with an HS256 dev key.
   */
  production?: { verifier: TokenVerifierOptions };
  /** Lease time to live from reservation (default: leases do not expire). */
  leaseTtlMs?: number;
  /** The AgentHost port (default: the embedded stand-in, configured as soon as its sandbox started). */
  agentHost?: AgentHost;
  /** The immutable AgentHost configuration runtime profiles resolve from (default: none). */
  agentHostProfiles?: AgentHostConfiguration;
  /** Start workers (in-process queue unless `redisUrl` is given). */
  workers?: WorkerSettings | false;
  /** Core's suspend/resume side (default: none, so suspend and resume answer 503). */
  runtimeCore?: RuntimeCore;
  /** The network policy owner's write a resume needs (default: none). */
  networkPolicyWriter?: NetworkPolicyWriter;
  /** Events' protected material read resume bootstrap needs (default: none, so it answers 503). */
  runtimeEvents?: RuntimeEvents;
  /** Offer BuildTest: the API side (profile, Core, runner) and the workers' (the same plus an actor). */
  buildTest?: { offer: BuildTestOffer; worker: BuildTestWorkerDeps };
}

export async function buildHarness(db: Database, options: HarnessOptions = {}): Promise<Harness> {
  if (options.migrated !== true) {
    await migrate(db);
    // The harness always builds the simulated provider (as `provider`), so its table is always due.
    await migrateSimulated(db);
  }
  const key = options.key ?? new Uint8Array(randomBytes(32));
  const provider = new SimulatedProvider({ db, optionsRevision: '1', ...options.provider });
  const authority = options.authority ?? new GrantsAuthority(db);
  const active: SandboxProvider = options.sandboxProvider ?? provider;
  const logger = createLogger({ level: 'silent' });
  const runtime = createEnvironmentRuntime(db);
  const networkPolicies = options.networkPolicies ?? new TableNetworkPolicies(db);
  const selections = options.selections ?? new TableRunSelections(db);
  // What the workers check at dispatch and when they commit a result, as admission does.
  const ports = { networkPolicies, authority, selections };
  const callTimeoutMs = (options.workers === false ? undefined : options.workers?.callTimeoutMs) ?? 2_000;
  const services = createServices({
    db,
    runtime,
    runner: attemptRunner(runnerDeps({ db, runtime, provider: active, logger, ...ports }, callTimeoutMs)),
    provider: active,
    authority,
    selections,
    networkPolicies,
    ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
    ...(options.workspaceStorage === undefined ? {} : { workspaceStorage: options.workspaceStorage }),
    ...(options.agentHost === undefined ? {} : { agentHost: options.agentHost }),
    ...(options.agentHostProfiles === undefined ? {} : { agentHostProfiles: options.agentHostProfiles }),
    ...(options.buildTest === undefined ? {} : { buildTest: options.buildTest.offer }),
    ...(options.runtimeCore === undefined ? {} : { runtimeCore: options.runtimeCore }),
    ...(options.runtimeEvents === undefined ? {} : { runtimeEvents: options.runtimeEvents }),
    ...(options.networkPolicyWriter === undefined
      ? {}
      : { networkPolicyWriter: options.networkPolicyWriter }),
  });
  const workers =
    options.workers === undefined || options.workers === false
      ? null
      : await startWorkers(
          {
            db,
            runtime,
            provider: active,
            logger,
            ...ports,
            ...(options.buildTest === undefined ? {} : { buildTest: options.buildTest.worker }),
          },
          {
            reconcileEveryMs: 200,
            republishAfterMs: 500,
            relayPollMs: 100,
            callTimeoutMs,
            // Tests that need the observer ask for it; otherwise its describes would add attempts.
            observeEveryMs: 600_000,
            ...options.workers,
          },
        );
  const app = createApp({
    db,
    services,
    verifier: createTokenVerifier(options.production?.verifier ?? { kind: 'hs256', key, issuer, audience }),
    logger,
    provider: active.identity,
    embedded: options.production === undefined,
  });
  return {
    db,
    runtime,
    services,
    provider,
    networkPolicies,
    authority,
    selections,
    workers,
    // The Node server's bindings (its `incoming` and `outgoing`) passed on, as `serve` does.
    fetch: (request, env) => app.fetch(request, env),
    async close() {
      await workers?.close();
      await provider.close();
    },
    async request(method, path, { token, body, contentType } = {}) {
      const headers: Record<string, string> = {};
      if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = contentType ?? 'application/json';
      return app.request(path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
    },
    token: (tenant, subject, opts = {}) =>
      mintDevToken({
        key,
        issuer,
        audience: opts.audience ?? audience,
        tenant,
        subject,
        operator: opts.operator ?? false,
        ttlSeconds: opts.ttlSeconds ?? 600,
        ...(opts.runBinding === undefined ? {} : { runBinding: opts.runBinding }),
      }),
  };
}

export const allPermissions = ['ReadProjects', 'WriteProjects', 'ReadRunSelection'] as const;

/** Grants a subject permissions and writes the run's selection, through the admin routes. */
export async function seedProject(
  h: Harness,
  {
    tenant,
    project,
    run,
    subject,
    permissions = allPermissions,
  }: {
    tenant: string;
    project: string;
    run: string;
    subject: string;
    permissions?: readonly string[];
  },
): Promise<void> {
  const operator = await h.token(tenant, 'operator', { operator: true });
  const grant = await h.request('PUT', `/admin/tenants/${tenant}/projects/${project}/grants/${subject}`, {
    token: operator,
    body: { permissions },
  });
  if (grant.status !== 200) throw new Error(`grant failed: ${grant.status} ${await grant.text()}`);
  const provider = (await (await h.request('GET', '/admin/provider', { token: operator })).json()) as object;
  const selection = await h.request(
    'PUT',
    `/admin/tenants/${tenant}/projects/${project}/runs/${run}/selection`,
    {
      token: operator,
      body: { candidates: [{ ...provider, exclusive: true }] },
    },
  );
  if (selection.status !== 200 && selection.status !== 201) {
    throw new Error(`selection failed: ${selection.status} ${await selection.text()}`);
  }
}
