// The private `sandbox.host-control/v1` listener: its own HTTPS server on its own address, apart from
// the public API, reachable only by enrolled hosts. Who is calling is decided twice, and both must
// hold on every request: TLS 1.3 with a client certificate that chains to the hosts' CA (the
// handshake fails otherwise), then the exact certificate, by the SHA-256 of its DER, must be a
// current generation in the HostCertificateDirectory at `now` (a revoked or expired generation is
// 403 though its chain is still valid). The host named in the path must be the authenticated one.
// Nothing reaches a handler before all of that; the handlers are injected, so this file knows no
// database. Answers are JSON or problem+json, never cached; a problem or a log line names a status,
// a slug and a host id, never a certificate, a fingerprint or an error's message.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { SandlotError } from '../../lib/errors.ts';
import {
  MAX_CONTROL_REQUEST_BYTES,
  MAX_ENVELOPES_PER_ANSWER,
  PROBLEM_TYPE_PREFIX,
  ROUTE_PATTERN,
  SEQUENCE_PATTERN,
} from './control-wire.ts';
import type { HostCertificateDirectory } from './directory.ts';
import type { EnvelopeWire } from './envelope-schema.ts';
import { firstIssue } from './envelope-schema.ts';
import { HostResultRefusedError } from './errors.ts';
import { hostResultWireSchema, type HostResultWire } from './host-result.ts';

/** The authenticated caller, and a signal that fires if it goes away before its answer. */
export interface ControlCallContext {
  generation: number;
  signal: AbortSignal;
}

/** What the control plane does for a host; throw a SandlotError (4xx) to refuse. */
export interface ControlHandlers {
  /** The host's envelopes with a sequence above `after`, in sequence order. */
  assignments(
    hostId: string,
    after: number,
    context: ControlCallContext,
  ): Promise<{ envelopes: readonly EnvelopeWire[] }>;
  /** Records a host-signed result (the handler verifies it against the assignment). */
  result(hostId: string, wire: HostResultWire, context: ControlCallContext): Promise<{ accepted: true }>;
}

export interface ControlListenerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** The listener's own serverAuth certificate and key. */
  certPem: string;
  keyPem: string;
  /** The CA that issues hosts' client certificates; the only roots a client chain may end in. */
  clientCaPem: string;
  directory: HostCertificateDirectory;
  handlers: ControlHandlers;
  now?: () => Date;
  maxRequestBytes?: number;
  logger?: Pick<Logger, 'warn' | 'error'>;
}

export interface ControlListener {
  port: number;
  close(): Promise<void>;
}

interface ProblemAnswer {
  status: number;
  slug: string;
  title: string;
  detail?: string;
  headers?: Record<string, string>;
}

const problem = (status: number, slug: string, title: string, detail?: string): ProblemAnswer =>
  detail === undefined ? { status, slug, title } : { status, slug, title, detail };

const FORBIDDEN = problem(403, 'host-forbidden', 'Host not authorized');
const INTERNAL = problem(500, 'internal-error', 'Internal error');

export async function startControlListener(options: ControlListenerOptions): Promise<ControlListener> {
  const now = options.now ?? (() => new Date());
  const maxRequestBytes = options.maxRequestBytes ?? MAX_CONTROL_REQUEST_BYTES;
  const server: Server = createServer(
    {
      cert: options.certPem,
      key: options.keyPem,
      ca: options.clientCaPem,
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.3',
      handshakeTimeout: 10_000,
    },
    (req, res) => {
      void serve(req, res, { ...options, now, maxRequestBytes });
    },
  );
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  // A failed handshake is logged by its Node code only (the certificate it carried is not).
  server.on('tlsClientError', (error: NodeJS.ErrnoException) => {
    options.logger?.warn({ code: error.code ?? 'unknown' }, 'host-control handshake refused');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

type Resolved = ControlListenerOptions & { now: () => Date; maxRequestBytes: number };

async function serve(req: IncomingMessage, res: ServerResponse, options: Resolved): Promise<void> {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  let hostId: string | undefined;
  try {
    const peer = await authenticate(req, options);
    if ('status' in peer) return sendProblem(res, peer);
    hostId = peer.hostId;
    const context = { generation: peer.generation, signal: controller.signal };
    const route = routeOf(req, peer.hostId);
    if ('status' in route) return sendProblem(res, route);
    if (route.kind === 'assignments') {
      const answer = await options.handlers.assignments(peer.hostId, route.after, context);
      if (answer.envelopes.length > MAX_ENVELOPES_PER_ANSWER) throw new Error('too many envelopes');
      return sendJson(res, 200, { envelopes: answer.envelopes });
    }
    const wire = await readResult(req, options.maxRequestBytes, peer.hostId);
    if ('status' in wire) return sendProblem(res, wire);
    await options.handlers.result(peer.hostId, wire.wire, context);
    return sendJson(res, 200, { accepted: true });
  } catch (error) {
    const answer = handlerProblem(error);
    if (answer.status >= 500) {
      const name = error instanceof Error ? error.name : typeof error;
      options.logger?.error({ hostId, error: name, status: answer.status }, 'host-control request failed');
    }
    return sendProblem(res, answer);
  }
}

/** The TLS layer checked the chain; this checks the exact certificate's generation, now. */
async function authenticate(
  req: IncomingMessage,
  options: Resolved,
): Promise<{ hostId: string; generation: number } | ProblemAnswer> {
  const socket = req.socket as TLSSocket;
  if (!socket.authorized) return FORBIDDEN;
  const raw = socket.getPeerCertificate().raw as Buffer | undefined;
  if (raw === undefined || raw.length === 0) return FORBIDDEN;
  const fingerprint = createHash('sha256').update(raw).digest('hex');
  let enrolled: { hostId: string; generation: number } | null;
  try {
    enrolled = await options.directory.lookup(fingerprint, options.now());
  } catch (error) {
    const name = error instanceof Error ? error.name : typeof error;
    options.logger?.error({ error: name }, 'host certificate directory failed');
    return problem(503, 'host-control-unavailable', 'Host control unavailable');
  }
  return enrolled ?? FORBIDDEN;
}

type Route = { kind: 'assignments'; after: number } | { kind: 'results' };

function routeOf(req: IncomingMessage, authenticated: string): Route | ProblemAnswer {
  const url = new URL(req.url ?? '/', 'https://host-control.invalid');
  const match = ROUTE_PATTERN.exec(url.pathname);
  const notFound = problem(404, 'not-found', 'Not found');
  if (match === null) return notFound;
  let hostId: string;
  try {
    hostId = decodeURIComponent(match[1] ?? '');
  } catch {
    return notFound;
  }
  const kind = match[2] === 'assignments' ? 'assignments' : 'results';
  const method = kind === 'assignments' ? 'GET' : 'POST';
  if (req.method !== method) {
    return { ...problem(405, 'method-not-allowed', 'Method not allowed'), headers: { allow: method } };
  }
  if (hostId !== authenticated) return FORBIDDEN;
  if (kind === 'results') {
    return url.search === '' ? { kind } : problem(400, 'bad-request', 'Bad request', 'no query is accepted');
  }
  const names = [...url.searchParams.keys()];
  const after = url.searchParams.get('after');
  if (names.length !== 1 || names[0] !== 'after' || after === null || !SEQUENCE_PATTERN.test(after)) {
    return problem(400, 'bad-request', 'Bad request', 'the query must be exactly after=<sequence>');
  }
  const value = Number(after);
  if (!Number.isSafeInteger(value)) {
    return problem(400, 'bad-request', 'Bad request', 'the query must be exactly after=<sequence>');
  }
  return { kind, after: value };
}

/** Reads and checks a result body: JSON by content type, bounded, strictly the signed result shape. */
async function readResult(
  req: IncomingMessage,
  maxBytes: number,
  hostId: string,
): Promise<{ wire: HostResultWire } | ProblemAnswer> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    return problem(415, 'unsupported-media-type', 'Unsupported media type', 'send application/json');
  }
  const tooLarge = problem(413, 'payload-too-large', 'Payload too large', `at most ${maxBytes} bytes`);
  if (Number(req.headers['content-length'] ?? 0) > maxBytes) return tooLarge;
  const bytes = await readBounded(req, maxBytes);
  if (bytes === undefined) return tooLarge;
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return problem(400, 'bad-request', 'Bad request', 'the body is not UTF-8 JSON');
  }
  const parsed = hostResultWireSchema.safeParse(json);
  if (!parsed.success)
    return problem(400, 'result-malformed', 'Host result malformed', firstIssue(parsed.error));
  if (parsed.data.body.hostId !== hostId) return FORBIDDEN;
  return { wire: parsed.data };
}

/**
 * The body, or undefined once it passes `maxBytes`. The rest is read and dropped rather than the
 * socket destroyed, so the 413 still reaches the host; the answer closes the connection, and the
 * server's request timeout bounds a body that never ends.
 */
function readBounded(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.resume();
      resolve(undefined);
    };
    req.on('data', onData);
    req.once('end', () => resolve(size <= maxBytes ? Buffer.concat(chunks) : undefined));
    req.once('error', reject);
  });
}

/** A handler's refusal keeps its slug and status; anything else is a bare 500. */
function handlerProblem(error: unknown): ProblemAnswer {
  if (error instanceof HostResultRefusedError) {
    // Refused bytes came from the caller: 422 to the host (the 502 is for the public API's view).
    return problem(422, error.code, error.title);
  }
  if (error instanceof SandlotError && error.status >= 400 && error.status < 500) {
    return problem(error.status, error.code, error.title, error.detail);
  }
  if (error instanceof SandlotError && error.status === 503) {
    return problem(503, error.code, error.title);
  }
  return INTERNAL;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(text)),
  });
  res.end(text);
}

function sendProblem(res: ServerResponse, answer: ProblemAnswer): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = {
    type: `${PROBLEM_TYPE_PREFIX}${answer.slug}`,
    title: answer.title,
    status: answer.status,
    ...(answer.detail === undefined ? {} : { detail: answer.detail }),
  };
  const text = JSON.stringify(body);
  res.writeHead(answer.status, {
    ...answer.headers,
    'content-type': 'application/problem+json',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(text)),
    // A request body may be left unread; the connection is not reused after a refusal.
    connection: 'close',
  });
  res.end(text);
}
