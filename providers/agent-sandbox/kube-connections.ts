// Kept-alive connections to the API server. client-node 1.x builds a fresh `https.Agent` for every
// request (KubeConfig.applySecurityAuthentication), so each request opened its own TCP connection
// and paid a whole TLS handshake on both sides: at 24 concurrent lifecycles that was most of a
// request's time, and it made the API server's CPU (the fake's, in tests) the limit. Here the API
// clients are built over an authentication that lets client-node apply the kubeconfig as usual
// (headers, token refresh, client certificates) and then swaps in one keep-alive agent per
// KubeConfig, built from exactly the TLS options client-node chose; when those change (a rotated
// client certificate or CA), a new agent replaces the old one. Proxied clusters keep client-node's
// own agent. Idle sockets are closed after IDLE_SOCKET_MS, well before common server idle timeouts
// (Node's own 5 s, the API server's longer ones), so a request is never written onto a socket the
// server is closing; no socket cap, so no request ever queues behind another in our client.
import { Agent, type AgentOptions } from 'node:https';
import {
  ServerConfiguration,
  createConfiguration,
  type Configuration,
  type KubeConfig,
  type RequestContext,
  type SecurityAuthentication,
} from './client-node.ts';

/** How long a kept-alive socket may sit idle before our side closes it. */
export const IDLE_SOCKET_MS = 4_000;

/** The TLS options of an agent that decide which server it trusts and who it says it is. */
const TLS_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

/** client-node reads the CA, certificate and key afresh for each request: compare them by content. */
function sameOption(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => sameOption(x, b[i]));
  const bytes = (v: unknown) => (typeof v === 'string' ? Buffer.from(v) : Buffer.isBuffer(v) ? v : undefined);
  const [x, y] = [bytes(a), bytes(b)];
  return x !== undefined && y !== undefined && x.equals(y);
}

class PooledAuthentication implements SecurityAuthentication {
  #agent: Agent | undefined;

  constructor(private readonly kubeConfig: KubeConfig) {}

  getName(): string {
    return 'kubeconfig authentication, kept-alive connections';
  }

  async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await this.kubeConfig.applySecurityAuthentication(context);
    const chosen = context.getAgent();
    // Only a plain HTTPS agent is replaced: a proxy agent (or none) stays client-node's.
    if (chosen?.constructor !== Agent) return;
    const wanted: AgentOptions = chosen.options;
    let agent = this.#agent;
    if (agent === undefined || TLS_KEYS.some((k) => !sameOption(agent?.options[k], wanted[k]))) {
      // The old agent is not destroyed: requests in flight on it finish, its idle sockets time out.
      const tls: AgentOptions = {};
      for (const k of TLS_KEYS) if (wanted[k] !== undefined) Object.assign(tls, { [k]: wanted[k] });
      agent = new Agent({ ...tls, keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' });
      this.#agent = agent;
    }
    context.setAgent(agent);
  }

  /** Open sockets of the pooled agent (for tests and the request profile). */
  sockets(): number {
    const agent = this.#agent;
    if (agent === undefined) return 0;
    const count = (group: NodeJS.ReadOnlyDict<unknown[]>) =>
      Object.values(group).reduce((n, list) => n + (list?.length ?? 0), 0);
    return count(agent.sockets) + count(agent.freeSockets);
  }
}

const pools = new WeakMap<KubeConfig, PooledAuthentication>();

/** The one pooled authentication of a KubeConfig: every API client built over it shares its agent. */
function poolOf(kubeConfig: KubeConfig): PooledAuthentication {
  let pool = pools.get(kubeConfig);
  if (pool === undefined) {
    pool = new PooledAuthentication(kubeConfig);
    pools.set(kubeConfig, pool);
  }
  return pool;
}

/** An API client as `kubeConfig.makeApiClient(api)` builds it, but over the kept-alive connections. */
export function pooledApiClient<T>(kubeConfig: KubeConfig, api: new (configuration: Configuration) => T): T {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('No active cluster!');
  return new api(
    createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: poolOf(kubeConfig) },
    }),
  );
}

/** Sockets open (busy or idle) to the API server over a KubeConfig's kept-alive connections. */
export const openSockets = (kubeConfig: KubeConfig): number => pools.get(kubeConfig)?.sockets() ?? 0;
