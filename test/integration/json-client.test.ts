// The pooled JSON client the Projects and run-selection clients use: connections are kept alive and
// reused, each request has one deadline, an answer is bounded, and every failure maps to
// upstream-unavailable (never an empty answer).
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonClient, UpstreamError } from '../../http/clients/fetch-json.ts';
import { toProblem } from '../../http/errors.ts';

describe('pooled JSON client', () => {
  let server: Server;
  let base: string;
  let connections = 0;
  const hanging = new Set<ServerResponse>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      const send = (status: number, body: string) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body);
      };
      switch (req.url) {
        case '/ok':
          return send(200, JSON.stringify({ permissions: ['ReadProjects'] }));
        case '/missing':
          return send(404, '{"error":"no"}');
        case '/boom':
          return send(500, '{"error":"boom"}');
        case '/huge':
          return send(200, JSON.stringify({ pad: 'x'.repeat(4096) }));
        case '/broken':
          return send(200, '{"permissions": [');
        default:
          hanging.add(res);
      }
    });
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('reuses one kept-alive connection for sequential requests', async () => {
    const client = new JsonClient('Projects', { timeoutMs: 2_000 });
    const before = connections;
    for (let i = 0; i < 20; i += 1) {
      expect(await client.get(new URL('/ok', base))).toEqual({
        status: 200,
        body: { permissions: ['ReadProjects'] },
      });
    }
    expect(await client.get(new URL('/missing', base))).toEqual({ status: 404 });
    expect(connections - before).toBe(1);
    client.close();
  });

  it('still answers after the server closed an idle pooled connection', async () => {
    const client = new JsonClient('Projects', { timeoutMs: 2_000 });
    expect((await client.get(new URL('/ok', base))).status).toBe(200);
    server.closeIdleConnections();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await client.get(new URL('/ok', base))).status).toBe(200);
    // And at once, without a pause: the stale connection is retried on a fresh one.
    server.closeIdleConnections();
    expect((await client.get(new URL('/ok', base))).status).toBe(200);
    client.close();
  });

  it('answers upstream-unavailable when the retry finds a stale connection too', async () => {
    // Each connection answers once; a request reusing it finds it closed (as after an upstream restart).
    const answered = new WeakSet<Socket>();
    const once = createServer((req, res) => {
      if (answered.has(req.socket)) return req.socket.destroy();
      answered.add(req.socket);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((resolve) => once.listen(0, '127.0.0.1', resolve));
    const url = new URL(`http://127.0.0.1:${(once.address() as AddressInfo).port}/ok`);
    const client = new JsonClient('Projects', { timeoutMs: 2_000 });
    // Two requests at once leave two kept-alive connections in the pool: the request and its retry.
    await Promise.all([client.get(url), client.get(url)]);
    const error = await client.get(url).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as Error).message).toBe('Projects is unavailable: ECONNRESET');
    expect(toProblem(error)).toMatchObject({ status: 503, code: 'upstream-unavailable' });
    client.close();
    once.closeAllConnections();
    await new Promise((resolve) => once.close(resolve));
  });

  it('maps every failure to upstream-unavailable with a caller-safe reason', async () => {
    const client = new JsonClient('Run selection', { timeoutMs: 300, maxBytes: 1024 });
    const reason = async (path: string) => {
      const error = await client.get(new URL(path, base)).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(UpstreamError);
      return (error as UpstreamError).message;
    };
    expect(await reason('/boom')).toBe('Run selection is unavailable: HTTP 500');
    expect(await reason('/huge')).toBe('Run selection is unavailable: response too large');
    expect(await reason('/broken')).toBe('Run selection is unavailable: response is not JSON');
    const started = performance.now();
    expect(await reason('/hang')).toBe('Run selection is unavailable: TimeoutError');
    expect(performance.now() - started).toBeLessThan(1_500);
    // The pool is still good after a timed-out connection was destroyed.
    expect((await client.get(new URL('/ok', base))).status).toBe(200);
    client.close();
    const closed = new JsonClient('Projects', { timeoutMs: 300 });
    const port = new URL(base).port;
    server.close();
    await expect(closed.get(new URL(`http://127.0.0.1:${port}/ok`))).rejects.toThrow(
      /^Projects is unavailable: /,
    );
    closed.close();
  });
});
