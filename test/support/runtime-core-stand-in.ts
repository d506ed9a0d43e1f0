// A stand-in Core HTTP server on 127.0.0.1 for the RuntimeCore HTTP adapter (http/clients/
// runtime-core-client.ts): it serves Core's three suspend/resume routes from a backend (the embedded
// RuntimeCore over a database), authenticates bearers from a fixed table, records every request,
// and lets a test intercept a request to answer it its own way (another Environment's operation,
// a verdict about another operation, a 5xx).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { CoreActor, RuntimeCore } from '../../actors/ports.ts';
import {
  runtimeOperationSchema,
  savedOperationEvidenceSchema,
  sameStep,
  type RuntimeStepRef,
} from '../../actors/runtime-core/runtime-operation.ts';
import { listenStandIn, sendJson } from './core-stand-in.ts';

export type RuntimeCoreRoute = 'current-operation' | 'confirm-saved' | 'current-registration';

export interface RuntimeInterception {
  route: RuntimeCoreRoute;
  ref: RuntimeStepRef;
  req: IncomingMessage;
  res: ServerResponse;
}

export interface RuntimeCoreStandIn {
  url: string;
  requests: { route: RuntimeCoreRoute; method: string; headers: IncomingMessage['headers'] }[];
  /** Answers a request itself (returns true) or lets the backend answer (false). */
  intercept: ((request: RuntimeInterception) => boolean) | undefined;
  /** Rewrites an honest 200 answer before it is sent (an answer about something else, say). */
  transform: ((route: RuntimeCoreRoute, answer: Record<string, unknown>) => unknown) | undefined;
  close(): Promise<void>;
}

const ROUTE =
  /^\/core\/tenants\/([^/]+)\/projects\/([^/]+)\/runs\/([^/]+)\/steps\/([^/]+)\/environments\/([^/]+)\/runtime\/(current-operation|current-registration|operations\/([^/]+)\/confirm-saved)$/;

const confirmBodySchema = z.strictObject({
  operation: runtimeOperationSchema,
  evidence: savedOperationEvidenceSchema,
});

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startRuntimeCoreStandIn(options: {
  backend: RuntimeCore;
  bearers: Record<string, { tenantId: string; subject: string }>;
}): Promise<RuntimeCoreStandIn> {
  const standIn: RuntimeCoreStandIn = {
    url: '',
    requests: [],
    intercept: undefined,
    transform: undefined,
    close: () => Promise.resolve(),
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const match = ROUTE.exec(new URL(req.url ?? '/', 'http://core').pathname);
    if (match === null) return sendJson(res, 404, { error: 'no such route' });
    const segment = (i: number) => decodeURIComponent(match[i] ?? '');
    const ref = {
      tenantId: segment(1),
      projectId: segment(2),
      runId: segment(3),
      stepId: segment(4),
      environmentId: segment(5),
    };
    const route: RuntimeCoreRoute =
      match[6] === 'current-operation' || match[6] === 'current-registration' ? match[6] : 'confirm-saved';
    standIn.requests.push({ route, method: req.method ?? '', headers: req.headers });
    if (standIn.intercept?.({ route, ref, req, res }) === true) return;

    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const who = bearer === undefined ? undefined : options.bearers[bearer];
    if (who === undefined) return sendJson(res, 401, { error: 'unauthenticated' });
    const actor: CoreActor = { ...who, bearer: bearer!, expiresAt: new Date(Date.now() + 3_600_000) };
    const signal = AbortSignal.timeout(10_000);
    const answer = (body: object) => sendJson(res, 200, standIn.transform?.(route, { ...body }) ?? body);

    if (route === 'current-operation' && req.method === 'GET') {
      const operation = await options.backend.currentRuntimeOperation(actor, ref, signal);
      return operation === null ? sendJson(res, 404, { error: 'none' }) : answer(operation);
    }
    if (route === 'current-registration' && req.method === 'GET') {
      const registration = await options.backend.currentRuntimeRegistration(actor, ref, signal);
      return registration === null ? sendJson(res, 404, { error: 'none' }) : answer(registration);
    }
    if (route === 'confirm-saved' && req.method === 'POST') {
      const operationId = segment(7);
      const parsed = confirmBodySchema.safeParse(JSON.parse(await bodyOf(req)));
      if (
        !parsed.success ||
        !sameStep(parsed.data.operation.ref, ref) ||
        parsed.data.operation.operationId !== operationId
      ) {
        return sendJson(res, 400, { error: 'bad request' });
      }
      const { operation, evidence } = parsed.data;
      const verdict = await options.backend.confirmSavedOperation(actor, operation, evidence, signal);
      return answer({ operationId, ...verdict });
    }
    return sendJson(res, 405, { error: 'method not allowed' });
  };

  Object.assign(standIn, await listenStandIn(handle));
  return standIn;
}
