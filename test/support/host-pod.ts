// A stand-in AgentHost Pod for HTTPS tests: a real TLS server on one loopback address (127.0.0.x
// stands for a Pod IP) with a certificate for a Service DNS name, counting the TLS connections and
// recording the requests that reached it, so a test can prove what a client sent and over which
// connection.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { ServerCertificate } from './tls-certificates.ts';

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** What a live AgentHost answers on /health/live: no-store JSON. */
export const live: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ status: 'live' }));
};

export class HostPod {
  handler: Handler = live;
  /** TLS connections completed, and requests seen, since the Pod started. */
  connections = 0;
  readonly requests: { path: string; headers: IncomingHttpHeaders }[] = [];
  readonly #server: Server;

  constructor(certificate: ServerCertificate) {
    this.#server = createServer({ cert: certificate.certPem, key: certificate.keyPem }, (req, res) => {
      this.requests.push({ path: req.url ?? '', headers: req.headers });
      this.handler(req, res);
    });
    this.#server.on('secureConnection', () => (this.connections += 1));
  }

  /** Listens on `host` (port 0: any free one) and answers the port. */
  async listen(host: string, port = 0): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => resolve());
    });
    return (this.#server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    if (!this.#server.listening) return;
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
