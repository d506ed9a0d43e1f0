// The metrics listener: GET /metrics on its own address (SANDLOT_METRICS_HOST:SANDLOT_METRICS_PORT),
// apart from the API. A scraper holds no user token, and the operator token is not something to
// hand to every Prometheus; a separate port stays off the public Service and needs neither.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  /** `http://host:port/metrics` as bound (port 0 resolved). */
  url: string;
  close(): Promise<void>;
}

export interface MetricsServerOptions {
  registry: Registry;
  host: string;
  /** 0: any free port (tests). */
  port: number;
  /** Told about a scrape that failed (it answers 500). */
  onError?: (error: unknown) => void;
}

export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const { registry } = options;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(path === '/metrics' ? 405 : 404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (body) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (error: unknown) => {
        options.onError?.(error);
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  });
  // Idle keep-alive sockets would otherwise hold close() open until the scraper lets go.
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
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      }),
  };
}
