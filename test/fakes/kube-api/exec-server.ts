// The Pod `exec` subresource: `GET /api/v1/namespaces/{ns}/pods/{name}/exec?container=…&command=…`
// upgraded to a WebSocket on the fake's HTTPS server. The upgrade is checked the way the API server
// and kubelet check it (bearer token, Pod, container, Running phase, at least one command, the
// `v5.channel.k8s.io` subprotocol); a refusal is a plain HTTP answer with a `Status` body.
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { KubeError, badRequest, notFound } from './errors.ts';
import type { ExecFault, ExecFaultPlan } from './exec-faults.ts';
import type { ExecHandler } from './exec-handlers.ts';
import { runExecSession, type ExecSession } from './exec-session.ts';
import { POD } from './resources.ts';
import type { ObjectStore } from './store.ts';
import type { KubeObject, RecordedRequest } from './types.ts';

export const EXEC_PROTOCOL = 'v5.channel.k8s.io';
const EXEC_PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/;

export interface ExecDeps {
  store: ObjectStore;
  token: string;
  handlers: Map<string, ExecHandler>;
  faults: ExecFaultPlan;
  sessions: ExecSession[];
  requests: RecordedRequest[];
}

export interface ExecEndpoint {
  onUpgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Ends every open session (the HTTPS server no longer tracks upgraded sockets). */
  close: () => void;
}

function refuse(socket: Duplex, code: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  const lines = [
    `HTTP/1.1 ${code} ${STATUS_CODES[code] ?? 'Unknown'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(text)}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${text}`);
}

function containerNames(pod: KubeObject, key: 'containers' | 'initContainers' = 'containers'): string[] {
  const containers = pod.spec?.[key];
  return Array.isArray(containers) ? (containers as { name: string }[]).map((c) => c.name) : [];
}

/** The Pod and container an upgrade may reach, or the KubeError the API server would answer. */
function admit(deps: ExecDeps, req: IncomingMessage, url: URL, namespace: string, name: string) {
  if (req.headers.authorization !== `Bearer ${deps.token}`) {
    throw new KubeError(401, 'Unauthorized', 'Unauthorized');
  }
  const pod = deps.store.read(POD, namespace, name);
  if (!pod) throw notFound(POD, name);
  const names = containerNames(pod);
  const container = url.searchParams.get('container') ?? (names.length === 1 ? names[0] : undefined);
  if (container === undefined) {
    throw badRequest(
      `a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`,
    );
  }
  // An init container (a native sidecar such as BuildTest's `preparation`) may be exec'd into too.
  if (!names.includes(container) && !containerNames(pod, 'initContainers').includes(container))
    throw badRequest(`container ${container} is not valid for pod ${name}`);
  if (pod.status?.['phase'] !== 'Running' || pod.metadata.deletionTimestamp) {
    throw badRequest(`unable to upgrade connection: container not found ("${container}")`);
  }
  const command = url.searchParams.getAll('command');
  if (command.length === 0) throw badRequest('you must specify at least 1 command');
  const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  if (!offered.includes(EXEC_PROTOCOL)) {
    throw badRequest(`the fake Kubernetes API speaks only the ${EXEC_PROTOCOL} exec subprotocol`);
  }
  return { pod, container, command };
}

export function createExecEndpoint(deps: ExecDeps): ExecEndpoint {
  const wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: 16 * 1024 * 1024,
    handleProtocols: (protocols) => (protocols.has(EXEC_PROTOCOL) ? EXEC_PROTOCOL : false),
  });

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const url = new URL(req.url ?? '/', 'https://fake-kube-api');
    const request: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body: undefined,
      contentType: undefined,
    };
    deps.requests.push(request);
    const match = EXEC_PATH.exec(url.pathname);
    const namespace = decodeURIComponent(match?.[1] ?? '');
    const name = decodeURIComponent(match?.[2] ?? '');
    let admitted: ReturnType<typeof admit>;
    try {
      if (!match || req.method !== 'GET') {
        throw new KubeError(404, 'NotFound', 'the server could not find the requested resource');
      }
      // A WebSocket upgrade is a GET: the API server's request info names the verb `get`.
      Object.assign(request, { verb: 'get', resource: 'pods', namespace, name, subresource: 'exec' });
      admitted = admit(deps, req, url, namespace, name);
    } catch (error) {
      const known = error instanceof KubeError ? error : new KubeError(500, 'InternalError', String(error));
      request.status = known.code;
      refuse(socket, known.code, known.toStatus());
      return;
    }
    const { pod, container, command } = admitted;
    const fault: ExecFault | undefined = deps.faults.take({ namespace, pod: name, container });
    if (fault?.kind === 'refuse-upgrade') {
      request.status = fault.status;
      const headers: Record<string, string> = fault.location ? { Location: fault.location } : {};
      refuse(socket, fault.status, { kind: 'Status', apiVersion: 'v1', status: 'Failure' }, headers);
      return;
    }
    request.status = 101;
    const session: ExecSession = {
      namespace,
      pod: name,
      podUid: pod.metadata.uid,
      container,
      command,
      stdinBytes: 0,
      stdinClosed: false,
      outcome: 'open',
    };
    if (fault) session.fault = fault.kind;
    deps.sessions.push(session);
    wss.handleUpgrade(req, socket, head, (ws) =>
      runExecSession(ws, pod, session, deps.handlers.get(container), fault),
    );
  };

  return {
    onUpgrade,
    close: () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
    },
  };
}
