// The worker's probe listener (SANDLOT_WORKER_HEALTH_HOST:SANDLOT_WORKER_HEALTH_PORT). A worker
// serves no API, so without this Kubernetes could only guess whether it is alive or useful.
// GET /healthz: the process answers (liveness: never depends on PostgreSQL or Redis, so an outage
// does not restart every worker). GET /readyz: 200 only when `unreadiness()` finds nothing wrong
// (database, Redis connections, queue and schedule running), 503 with the reasons otherwise.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HealthServer {
  /** `http://host:port` as bound (port 0 resolved). */
  url: string;
  close(): Promise<void>;
}

export interface HealthServerOptions {
  host: string;
  /** 0: any free port (tests). */
  port: number;
  /** Why the process cannot do its work now; empty when it can. Must not throw. */
  unreadiness: () => Promise<string[]>;
}

const json = (status: number, body: unknown) => ({
  status,
  headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  body: `${JSON.stringify(body)}\n`,
});

async function answer(path: string, options: HealthServerOptions) {
  if (path === '/healthz') return json(200, { status: 'ok' });
  if (path !== '/readyz') return json(404, { status: 'not-found' });
  const reasons = await options.unreadiness().catch((error: unknown) => [String(error)]);
  return reasons.length === 0 ? json(200, { status: 'ready' }) : json(503, { status: 'not-ready', reasons });
}

export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' }).end('method not allowed\n');
      return;
    }
    void answer(path, options).then(({ status, headers, body }) => {
      res.writeHead(status, headers).end(req.method === 'HEAD' ? undefined : body);
    });
  });
  // Probes open a connection per check; idle keep-alive sockets must not hold close() open.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      }),
  };
}
