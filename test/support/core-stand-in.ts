// A stand-in Core HTTP server on 127.0.0.1 for the Core port's HTTP adapter (http/clients/
// core-client.ts): it serves Core's three BuildTest routes from a backend (the embedded Core over a
// database, or plain maps in memory), authenticates bearers from a fixed table, records every
// request, and lets a test intercept any request to answer it its own way (a short seed, a
// redirect, a slow body, metadata that changes after the transfer).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  AcceptedBuildTestCommand,
  AcknowledgmentVerdict,
  BuildTestCheckpointRef,
  CoreActor,
  JournalAcknowledgment,
} from '../../actors/ports.ts';
import { journalAcknowledgmentSchema, sameCheckpoint } from '../../actors/build-test/accepted-command.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';

export type CoreRoute = 'accepted-command' | 'workspace-seed' | 'verify';

/** What the server answers from; the embedded Core fits as it is. */
export interface CoreBackend {
  acceptedCommand(
    actor: CoreActor,
    checkpoint: BuildTestCheckpointRef,
    signal: AbortSignal,
  ): Promise<AcceptedBuildTestCommand | null>;
  checkpointSeed(
    actor: CoreActor,
    checkpoint: BuildTestCheckpointRef,
    signal: AbortSignal,
  ): Promise<Uint8Array | null>;
  verifyAcknowledgment(
    actor: CoreActor,
    acknowledgment: JournalAcknowledgment,
    signal: AbortSignal,
  ): Promise<AcknowledgmentVerdict>;
}

export interface RecordedRequest {
  route: CoreRoute;
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
}

export interface Interception {
  route: CoreRoute;
  checkpoint: BuildTestCheckpointRef;
  /** How many requests this route had before this one. */
  seen: number;
  req: IncomingMessage;
  res: ServerResponse;
}

/** Answers a request itself (returns true) or lets the backend answer (false). */
export type Interceptor = (request: Interception) => boolean | Promise<boolean>;

export interface CoreStandIn {
  /** The base URL to configure the adapter with. */
  url: string;
  requests: RecordedRequest[];
  intercept: Interceptor | undefined;
  close(): Promise<void>;
}

const ROUTE =
  /^\/core\/tenants\/([^/]+)\/projects\/([^/]+)\/runs\/([^/]+)\/build-test\/steps\/([^/]+)\/checkpoints\/([^/]+)\/(accepted-command|workspace-seed|operations\/([^/]+)\/journal-acknowledgment\/verify)$/;

/**
 * Serves `handle` on a free port of 127.0.0.1 under `/core/`: a handler that throws answers 500 (or
 * drops a started answer). Answers the base URL and how to stop it, open connections included.
 */
export async function listenStandIn(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<unknown>,
): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { error: 'stand-in failure' });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/core/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'content-length': bytes.length,
    ...headers,
  });
  res.end(bytes);
}

export function sendSeed(res: ServerResponse, bytes: Uint8Array, headers: Record<string, string> = {}): void {
  res.writeHead(200, {
    'content-type': 'application/octet-stream',
    'cache-control': 'no-store',
    'content-length': bytes.length,
    ...headers,
  });
  res.end(bytes);
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startCoreStandIn(options: {
  backend: CoreBackend;
  /** Bearer → who it is; any other bearer is 401. */
  bearers: Record<string, { tenantId: string; subject: string }>;
}): Promise<CoreStandIn> {
  const requests: RecordedRequest[] = [];
  const counts = new Map<CoreRoute, number>();
  const standIn: CoreStandIn = { url: '', requests, intercept: undefined, close: () => Promise.resolve() };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://core').pathname;
    const match = ROUTE.exec(path);
    if (match === null) return sendJson(res, 404, { error: 'no such route' });
    const segment = (i: number) => decodeURIComponent(match[i] ?? '');
    const checkpoint = {
      tenantId: segment(1),
      projectId: segment(2),
      runId: segment(3),
      stepId: segment(4),
      checkpointId: segment(5),
    };
    const route: CoreRoute =
      match[6] === 'accepted-command'
        ? 'accepted-command'
        : match[6] === 'workspace-seed'
          ? 'workspace-seed'
          : 'verify';
    requests.push({ route, method: req.method ?? '', path, headers: req.headers });
    const seen = counts.get(route) ?? 0;
    counts.set(route, seen + 1);
    if (standIn.intercept !== undefined && (await standIn.intercept({ route, checkpoint, seen, req, res })))
      return;

    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const who = bearer === undefined ? undefined : options.bearers[bearer];
    if (who === undefined) return sendJson(res, 401, { error: 'unauthenticated' });
    const actor: CoreActor = { ...who, bearer: bearer!, expiresAt: new Date(Date.now() + 3_600_000) };
    const signal = AbortSignal.timeout(10_000);

    if (route === 'accepted-command' && req.method === 'GET') {
      const command = await options.backend.acceptedCommand(actor, checkpoint, signal);
      return command === null ? sendJson(res, 404, { error: 'not found' }) : sendJson(res, 200, command);
    }
    if (route === 'workspace-seed' && req.method === 'GET') {
      const seed = await options.backend.checkpointSeed(actor, checkpoint, signal);
      return seed === null ? sendJson(res, 404, { error: 'not found' }) : sendSeed(res, seed);
    }
    if (route === 'verify' && req.method === 'POST') {
      const parsed = journalAcknowledgmentSchema.safeParse(JSON.parse(await bodyOf(req)));
      if (
        !parsed.success ||
        !sameCheckpoint(parsed.data.checkpoint, checkpoint) ||
        parsed.data.operationId !== decodeURIComponent(match[7]!)
      ) {
        return sendJson(res, 400, { error: 'bad request' });
      }
      return sendJson(res, 200, await options.backend.verifyAcknowledgment(actor, parsed.data, signal));
    }
    return sendJson(res, 405, { error: 'method not allowed' });
  };

  Object.assign(standIn, await listenStandIn(handle));
  return standIn;
}

/** A backend of plain maps, for tests that need seeds or answers no database should hold. */
export class MemoryCoreBackend implements CoreBackend {
  readonly commands = new Map<string, AcceptedBuildTestCommand>();
  readonly seeds = new Map<string, Uint8Array>();

  static key(checkpoint: BuildTestCheckpointRef): string {
    return canonicalJson(checkpoint);
  }

  put(command: AcceptedBuildTestCommand, seed?: Uint8Array): void {
    this.commands.set(MemoryCoreBackend.key(command.checkpoint), command);
    if (seed !== undefined) this.seeds.set(MemoryCoreBackend.key(command.checkpoint), seed);
  }

  acceptedCommand(
    actor: CoreActor,
    checkpoint: BuildTestCheckpointRef,
  ): Promise<AcceptedBuildTestCommand | null> {
    if (actor.tenantId !== checkpoint.tenantId) return Promise.resolve(null);
    return Promise.resolve(this.commands.get(MemoryCoreBackend.key(checkpoint)) ?? null);
  }

  checkpointSeed(actor: CoreActor, checkpoint: BuildTestCheckpointRef): Promise<Uint8Array | null> {
    if (actor.tenantId !== checkpoint.tenantId) return Promise.resolve(null);
    return Promise.resolve(this.seeds.get(MemoryCoreBackend.key(checkpoint)) ?? null);
  }

  verifyAcknowledgment(): Promise<AcknowledgmentVerdict> {
    return Promise.resolve({ verified: false, reason: 'nothing admitted' });
  }
}
