// The HTTP face of the fake: parses Kubernetes REST paths, checks the bearer token, records every
// request, applies injected faults and answers with JSON objects or `Status` failures. A list route
// asked with `watch=true` is the verb `watch` and is answered by a stream (watch-streams.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KubeApi } from './api-server.ts';
import type { DeleteOptions, Deleter, PropagationPolicy } from './deletion.ts';
import { discovery } from './discovery.ts';
import { KubeError, badRequest, injected } from './errors.ts';
import type { FaultPlan, RequestFacts } from './faults.ts';
import { findResource, type ResourceType } from './resources.ts';
import type { PodLogs } from './pod-logs.ts';
import { isObject, type RecordedRequest, type Verb } from './types.ts';
import { isWatch, watchRequest, type WatchRequest } from './watch-events.ts';
import type { WatchStreams } from './watch-streams.ts';

export interface RouterDeps {
  api: KubeApi;
  deleter: Deleter;
  faults: FaultPlan;
  token: string;
  requests: RecordedRequest[];
  watches: WatchStreams;
  logs: PodLogs;
}

interface Target {
  resource: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

interface Outcome {
  code: number;
  body: unknown;
  /** A plain-text answer (a Pod's log) instead of JSON. */
  text?: Buffer;
}

const POLICIES: readonly PropagationPolicy[] = ['Foreground', 'Background', 'Orphan'];
const PAGE_NOT_FOUND = new KubeError(404, 'NotFound', 'the server could not find the requested resource');

function parseTarget(path: string): Target | undefined {
  const parts = path
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  let rest: string[];
  let group = '';
  let version: string | undefined;
  if (parts[0] === 'api') [version, rest] = [parts[1], parts.slice(2)];
  else if (parts[0] === 'apis') [group, version, rest] = [parts[1] ?? '', parts[2], parts.slice(3)];
  else return undefined;
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) [namespace, rest] = [rest[1], rest.slice(2)];
  const [plural, name, subresource, ...extra] = rest;
  const resource = version && plural ? findResource(group, version, plural) : undefined;
  if (!resource || extra.length > 0) return undefined;
  if (namespace !== undefined && !resource.namespaced) return undefined;
  const isLog = subresource === 'log' && group === '' && plural === 'pods';
  if (subresource !== undefined && !isLog && (subresource !== 'status' || !resource.statusSubresource))
    return undefined;
  const target: Target = { resource };
  if (namespace !== undefined) target.namespace = namespace;
  if (name !== undefined) target.name = name;
  if (subresource !== undefined) target.subresource = subresource;
  return target;
}

function verbOf(method: string, target: Target): Verb | undefined {
  const named = target.name !== undefined;
  const needsNamespace = target.resource.namespaced && target.namespace === undefined;
  // The log subresource is read-only: `get` on pods/log, as RBAC names it.
  if (target.subresource === 'log') return method === 'GET' && named && !needsNamespace ? 'get' : undefined;
  switch (method) {
    case 'GET':
      return named ? (needsNamespace ? undefined : 'get') : 'list';
    case 'POST':
      return named || needsNamespace || target.subresource ? undefined : 'create';
    case 'PUT':
      return named && !needsNamespace ? 'replace' : undefined;
    case 'PATCH':
      return named && !needsNamespace ? 'patch' : undefined;
    case 'DELETE':
      if (target.subresource) return undefined;
      return named ? (needsNamespace ? undefined : 'delete') : 'deletecollection';
    default:
      return undefined;
  }
}

function deleteOptions(body: unknown, query: Record<string, string>): DeleteOptions {
  const options: DeleteOptions = isObject(body) ? body : {};
  const policy = (query['propagationPolicy'] ?? options.propagationPolicy) as PropagationPolicy | undefined;
  if (policy !== undefined && !POLICIES.includes(policy)) {
    throw new KubeError(422, 'Invalid', `propagationPolicy: Unsupported value: "${String(policy)}"`);
  }
  const result: DeleteOptions = { ...options };
  if (policy !== undefined) result.propagationPolicy = policy;
  if (query['gracePeriodSeconds'] !== undefined)
    result.gracePeriodSeconds = Number(query['gracePeriodSeconds']);
  if (query['orphanDependents'] !== undefined) result.orphanDependents = query['orphanDependents'] === 'true';
  return result;
}

function dispatch(
  deps: RouterDeps,
  verb: Exclude<Verb, 'watch'>,
  target: Target,
  request: RecordedRequest,
): Outcome {
  const { api, deleter } = deps;
  const { resource, namespace, subresource } = target;
  const name = target.name ?? '';
  const { body, query } = request;
  if (query['dryRun'] !== undefined) throw badRequest('the fake Kubernetes API does not support dryRun');
  switch (verb) {
    case 'get':
      if (subresource === 'log') {
        const text = deps.logs.read(api.get(resource, namespace, name), query);
        return { code: 200, body: undefined, text };
      }
      return { code: 200, body: api.get(resource, namespace, name) };
    case 'list':
      return { code: 200, body: api.list(resource, namespace, query) };
    case 'create':
      return { code: 201, body: api.create(resource, namespace, body) };
    case 'replace':
      return { code: 200, body: api.replace(resource, namespace, name, body, subresource) };
    case 'patch':
      return {
        code: 200,
        body: api.patch(resource, namespace, name, body, request.contentType, subresource),
      };
    case 'delete': {
      const result = deleter.delete(resource, api.get(resource, namespace, name), deleteOptions(body, query));
      return { code: result.code, body: result.object };
    }
    case 'deletecollection': {
      const listed = api.list(resource, namespace, query)['items'] as {
        metadata: { namespace?: string; name: string };
      }[];
      const options = deleteOptions(body, query);
      const items = listed.map(
        (o) =>
          deleter.delete(resource, api.get(resource, o.metadata.namespace, o.metadata.name), options).object,
      );
      return { code: 200, body: { apiVersion: 'v1', kind: `${resource.kind}List`, metadata: {}, items } };
    }
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, outcome: Outcome): void {
  if (outcome.text !== undefined) {
    res.writeHead(outcome.code, { 'content-type': 'text/plain' });
    res.end(outcome.text);
    return;
  }
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (outcome.code === 429 || outcome.code === 503) headers['retry-after'] = '1';
  res.writeHead(outcome.code, headers);
  res.end(JSON.stringify(outcome.body));
}

function failure(error: unknown): Outcome {
  const known = error instanceof KubeError ? error : new KubeError(500, 'InternalError', String(error));
  return { code: known.code, body: known.toStatus() };
}

async function handle(deps: RouterDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'https://fake-kube-api');
  const raw = await readBody(req);
  const arrived = performance.now();
  const request: RecordedRequest = {
    method: req.method ?? 'GET',
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    body: undefined,
    contentType: req.headers['content-type'],
    receivedAtMs: performance.timeOrigin + arrived,
  };
  deps.requests.push(request);
  const answer = (outcome: Outcome): void => {
    request.status = outcome.code;
    send(res, outcome);
    request.serviceMs = performance.now() - arrived;
  };
  if (req.headers.authorization !== `Bearer ${deps.token}`) {
    return answer(failure(new KubeError(401, 'Unauthorized', 'Unauthorized')));
  }
  if (deps.faults.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, deps.faults.delayMs));
  let parseError: KubeError | undefined;
  try {
    request.body = raw === '' ? undefined : (JSON.parse(raw) as unknown);
  } catch {
    parseError = badRequest('the request body is not valid JSON');
  }
  const document = req.method === 'GET' ? discovery(url.pathname) : undefined;
  if (document) return answer({ code: 200, body: document });
  const target = parseTarget(url.pathname);
  const routed = target ? verbOf(request.method, target) : undefined;
  const verb = routed === 'list' && isWatch(request.query) ? 'watch' : routed;
  if (!target || !verb) return answer(failure(PAGE_NOT_FOUND));
  const facts: RequestFacts = { verb, resource: target.resource.plural };
  if (target.namespace !== undefined) facts.namespace = target.namespace;
  if (target.name !== undefined) facts.name = target.name;
  if (target.subresource !== undefined) facts.subresource = target.subresource;
  Object.assign(request, facts);
  const injectedStatus = deps.faults.takeFailure(facts);
  if (injectedStatus !== undefined)
    return answer(failure(injected(injectedStatus, verb, target.resource, target.name)));
  const drop = deps.faults.takeDrop(facts);
  const dropped = (): void => {
    request.status = 0;
    request.serviceMs = performance.now() - arrived;
    req.socket.destroy();
  };
  if (verb === 'watch') {
    if (drop) return dropped(); // nothing to apply: the connection goes before the stream opens
    let watch: WatchRequest;
    try {
      watch = watchRequest(target.resource, target.namespace, request.query);
    } catch (error) {
      return answer(failure(error));
    }
    request.status = 200;
    deps.watches.serve(watch, res);
    request.serviceMs = performance.now() - arrived;
    return;
  }
  let outcome: Outcome;
  try {
    if (parseError && verb !== 'patch') throw parseError;
    outcome = dispatch(deps, verb, target, request);
  } catch (error) {
    outcome = failure(error);
  }
  if (drop) return dropped();
  answer(outcome);
}

export function createRequestHandler(deps: RouterDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(deps, req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, failure(error));
    });
  };
}
