// Where a Kubernetes request's time goes on the Agent Sandbox path: the production adapter against
// the fake Kubernetes API (CRD-validated, real HTTPS on 127.0.0.1), C lifecycles in flight at once,
// each provision → describe ×3 → release → listOwned, as a worker, the observer and reconciliation
// call them. For every request kind it prints how many there were and, p50/p99, the time our client
// saw (from the request's creation to its whole answer, so connection set-up and any queueing in
// our client included) beside the fake's own service time (from the whole request arriving to the
// answer written); the difference is connection set-up, queueing and the wire. It also prints the
// requests each adapter operation made and how many TLS connections the fake accepted.
//
//   npx tsx bench/kube-requests.ts [--clients 24] [--lifecycles 96] [--json FILE]
//
// Needs the Agent Sandbox CRD schemas (SANDLOT_CRD_DIR, default ../shared/reference/…). Both sides
// run in this one process, as in `npm run chaos -- --provider agent-sandbox`, where the fake serves
// from the harness's process.
import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { crdDir, crdsPresent } from '../test/support/crd-dir.ts';
import {
  adapterOn,
  runtimeClassObject,
  withWorkspaces,
  NAMESPACE,
} from '../test/support/fake-cluster-harness.ts';
import { startFakeKubeApi } from '../test/fakes/kube-api/index.ts';
import {
  budget,
  newOwner,
  ownedBy,
  presentResource,
  provisionRequest,
  refTo,
  releaseOf,
} from '../test/contract/contract-subject.ts';

type Operation = 'provision' | 'describe' | 'release' | 'listOwned';

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '24' },
    lifecycles: { type: 'string', default: '96' },
    json: { type: 'string' },
  },
});
const clients = Number(values.clients);
const lifecycles = Number(values.lifecycles);
if (!crdsPresent) {
  console.error(`no Agent Sandbox CRD schemas in ${crdDir} (set SANDLOT_CRD_DIR)`);
  process.exit(2);
}

/** `get sandboxclaims`, `list pods`…: the verb and plural of a REST path. */
function kindOf(method: string, path: string): string {
  const parts = path
    .split('?')[0]!
    .split('/')
    .filter((p) => p !== '');
  const rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  const scoped = rest[0] === 'namespaces' && rest.length >= 3 ? rest.slice(2) : rest;
  const [plural, name] = scoped;
  const verb =
    method === 'GET'
      ? name === undefined
        ? 'list'
        : 'get'
      : method === 'POST'
        ? 'create'
        : method.toLowerCase();
  return `${verb} ${plural ?? '?'}`;
}

const operation = new AsyncLocalStorage<Operation>();
const started = new WeakMap<ClientRequest, { at: number; kind: string; operation: Operation | undefined }>();
const clientMs = new Map<string, number[]>();
const perOperation = new Map<Operation, { calls: number; requests: number }>();
subscribe('http.client.request.start', (message) => {
  const { request } = message as { request: ClientRequest };
  const op = operation.getStore();
  started.set(request, { at: performance.now(), kind: kindOf(request.method, request.path), operation: op });
  if (op !== undefined) perOperation.get(op)!.requests += 1;
});
subscribe('http.client.response.finish', (message) => {
  const { request } = message as { request: ClientRequest };
  const start = started.get(request);
  if (start === undefined) return;
  const list = clientMs.get(start.kind) ?? [];
  list.push(performance.now() - start.at);
  clientMs.set(start.kind, list);
});

const fake = await startFakeKubeApi({ namespace: NAMESPACE });
fake.objects.put(runtimeClassObject());
const provider = withWorkspaces(
  fake,
  adapterOn(fake, {
    SANDLOT_AGENT_SANDBOX_RECONCILIATION_TIMEOUT_SECONDS: '10',
    SANDLOT_AGENT_SANDBOX_POLL_INTERVAL_MILLISECONDS: '50',
  }),
);

async function timed<T>(op: Operation, run: () => Promise<T>): Promise<T> {
  const entry = perOperation.get(op) ?? { calls: 0, requests: 0 };
  entry.calls += 1;
  perOperation.set(op, entry);
  return operation.run(op, run);
}

async function lifecycle(): Promise<void> {
  const subject = { provider };
  const owner = newOwner();
  const resource = await timed('provision', () =>
    provider.provision(provisionRequest(subject, owner), budget(30_000)),
  );
  let seen = resource;
  for (let i = 0; i < 3; i += 1) {
    seen = presentResource(
      await timed('describe', () => provider.describe(refTo(subject, seen), budget(30_000))),
    );
  }
  await timed('release', () => provider.release(releaseOf(subject, seen), budget(30_000)));
  await timed('listOwned', () => provider.listOwned(ownedBy(subject, owner), budget(30_000)));
}

const wallStart = performance.now();
let next = 0;
let failed = 0;
await Promise.all(
  Array.from({ length: clients }, async () => {
    while (next < lifecycles) {
      next += 1;
      await lifecycle().catch((error: unknown) => {
        failed += 1;
        console.error(`lifecycle failed: ${String(error)}`);
      });
    }
  }),
);
const wallMs = performance.now() - wallStart;

const pct = (list: number[], p: number) => {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted.length === 0
    ? 0
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
const serviceMs = new Map<string, number[]>();
for (const r of fake.requests) {
  if (r.serviceMs === undefined) continue;
  const kind = `${r.verb ?? r.method} ${r.resource ?? '?'}`;
  serviceMs.set(kind, [...(serviceMs.get(kind) ?? []), r.serviceMs]);
}
const kinds = [...clientMs.keys()].sort(
  (a, b) => (clientMs.get(b)?.length ?? 0) - (clientMs.get(a)?.length ?? 0),
);
const rows = kinds.map((kind) => {
  const client = clientMs.get(kind) ?? [];
  const service = serviceMs.get(kind) ?? [];
  return {
    kind,
    count: client.length,
    clientP50: pct(client, 50),
    clientP99: pct(client, 99),
    serviceP50: pct(service, 50),
    serviceP99: pct(service, 99),
  };
});
const all = [...clientMs.values()].flat();
const allService = [...serviceMs.values()].flat();
const result = {
  clients,
  lifecycles,
  failed,
  wallSeconds: wallMs / 1000,
  lifecyclesPerSecond: (lifecycles - failed) / (wallMs / 1000),
  requests: all.length,
  requestsPerLifecycle: all.length / lifecycles,
  requestsPerSecond: all.length / (wallMs / 1000),
  tlsConnections: fake.connections(),
  client: { p50: pct(all, 50), p99: pct(all, 99) },
  service: { p50: pct(allService, 50), p99: pct(allService, 99) },
  perOperation: Object.fromEntries(
    [...perOperation].map(([op, v]) => [op, { calls: v.calls, requestsPerCall: v.requests / v.calls }]),
  ),
  kinds: rows,
};
const f = (n: number) => n.toFixed(1).padStart(7);
console.log(
  `${clients} clients, ${lifecycles} lifecycles (${failed} failed) in ${result.wallSeconds.toFixed(1)} s: ` +
    `${result.lifecyclesPerSecond.toFixed(2)} lifecycles/s, ${result.requests} requests ` +
    `(${result.requestsPerLifecycle.toFixed(1)} per lifecycle, ${result.requestsPerSecond.toFixed(0)}/s), ` +
    `${result.tlsConnections} TLS connections`,
);
console.log(
  `requests per call: ${Object.entries(result.perOperation)
    .map(([op, v]) => `${op} ${v.requestsPerCall.toFixed(1)}`)
    .join(', ')}`,
);
console.log(
  `all requests: client p50 ${f(result.client.p50)} p99 ${f(result.client.p99)} ms; fake service p50 ${f(result.service.p50)} p99 ${f(result.service.p99)} ms`,
);
console.log(`${'request'.padEnd(32)} ${'count'.padStart(6)}  client p50     p99   service p50     p99 (ms)`);
for (const r of rows) {
  console.log(
    `${r.kind.padEnd(32)} ${String(r.count).padStart(6)}  ${f(r.clientP50)} ${f(r.clientP99)}   ${f(r.serviceP50)} ${f(r.serviceP99)}`,
  );
}
if (values.json !== undefined) writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);
await fake.close();
