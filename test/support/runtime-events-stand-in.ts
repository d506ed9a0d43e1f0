// A stand-in Events HTTP server on 127.0.0.1 for the RuntimeEvents HTTP adapter (http/clients/
// runtime-events-client.ts): it serves the protected material route from the embedded tables (the
// same tenant and current registration checks as the embedded port, heldProtectedMaterial),
// authenticates bearers from a fixed table, records every request, and lets a test intercept a
// request to answer it its own way (a redirect, a cacheable answer, a body longer than acknowledged).
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { heldProtectedMaterial } from '../../actors/runtime-events/runtime-events-embedded.ts';
import type { MaterialKey } from '../../store/runtime-events-stand-in.ts';
import type { Database } from '../../store/db.ts';
import { listenStandIn, sendJson, sendSeed } from './core-stand-in.ts';

export interface EventsInterception {
  key: MaterialKey;
  req: IncomingMessage;
  res: ServerResponse;
}

export interface RuntimeEventsStandIn {
  url: string;
  requests: { method: string; url: string; headers: IncomingMessage['headers'] }[];
  /** Answers a request itself (returns true) or lets the tables answer (false). */
  intercept: ((request: EventsInterception) => boolean) | undefined;
  close(): Promise<void>;
}

const ROUTE =
  /^\/core\/tenants\/([^/]+)\/projects\/([^/]+)\/runs\/([^/]+)\/steps\/([^/]+)\/environments\/([^/]+)\/sessions\/([^/]+)\/events\/([^/]+)\/protected-material\/([^/]+)$/;

export async function startRuntimeEventsStandIn(options: {
  db: Database;
  bearers: Record<string, { tenantId: string; subject: string }>;
}): Promise<RuntimeEventsStandIn> {
  const standIn: RuntimeEventsStandIn = {
    url: '',
    requests: [],
    intercept: undefined,
    close: () => Promise.resolve(),
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const match = ROUTE.exec(new URL(req.url ?? '/', 'http://events').pathname);
    if (match === null) return sendJson(res, 404, { error: 'no such route' });
    const segment = (i: number) => decodeURIComponent(match[i] ?? '');
    const key: MaterialKey = {
      ref: {
        tenantId: segment(1),
        projectId: segment(2),
        runId: segment(3),
        stepId: segment(4),
        environmentId: segment(5),
      },
      sessionId: segment(6),
      eventId: segment(7),
      objectReference: segment(8),
    };
    standIn.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    if (standIn.intercept?.({ key, req, res }) === true) return;
    if (req.method !== 'GET') return sendJson(res, 405, { error: 'method not allowed' });

    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const who = bearer === undefined ? undefined : options.bearers[bearer];
    if (who === undefined) return sendJson(res, 401, { error: 'unauthenticated' });
    const bytes = await heldProtectedMaterial(options.db, who, key);
    if (bytes === null) return sendJson(res, 404, { error: 'none' });
    sendSeed(res, bytes, { 'x-content-sha256': createHash('sha256').update(bytes).digest('hex') });
  };

  Object.assign(standIn, await listenStandIn(handle));
  return standIn;
}
